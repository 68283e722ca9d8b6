"""One module per `cuopt-train` subcommand."""
