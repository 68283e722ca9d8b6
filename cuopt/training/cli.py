"""The `cuopt-train` command line: registers one module per subcommand, with the product's CLI
boundary (a CuoptError becomes one line and an exit code)."""
from __future__ import annotations

from typing import Any, Callable

import typer

from cuopt.cli import boundary
from cuopt.training.commands import collect, evaluate, fit, generate, report

app = typer.Typer(
    name="cuopt-train",
    help="Build cuopt's learned policy: corpus, self-play data on the GPU, training.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

COMMANDS: dict[str, Callable[..., Any]] = {
    "collect": collect.command,
    "evaluate": evaluate.command,
    "fit": fit.command,
    "generate": generate.command,
    "report": report.command,
}

for _name, _fn in COMMANDS.items():
    app.command(_name)(boundary(_fn))


def main() -> None:
    app(prog_name="cuopt-train")
