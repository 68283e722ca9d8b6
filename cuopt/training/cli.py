"""The `cuopt-train` command line: registers one module per subcommand, with the product's CLI
boundary (a CuoptError becomes one line and an exit code)."""
from __future__ import annotations

from typing import Any, Callable

from cuopt.cli import command_line
from cuopt.training.commands import collect, evaluate, fit, generate, report

COMMANDS: dict[str, Callable[..., Any]] = {  # each subcommand is named after its module
    module.__name__.rsplit(".", 1)[1]: module.command for module in (collect, evaluate, fit, generate, report)
}

app = command_line("cuopt-train", "Build cuopt's learned policy: corpus, self-play data on the GPU, training.", COMMANDS)


def main() -> None:
    app(prog_name="cuopt-train")
