"""One module per CLI command."""
