"""The `cuopt` command line: registers one module per command and is the only place that
turns a CuoptError into a one-line message and an exit code."""
from __future__ import annotations

import functools
import sys
from typing import Annotated, Any, Callable, Optional

import typer

from cuopt import __version__
from cuopt.commands import bench, explain, init, optimize, rewrites, rules
from cuopt.commands import capture, check
from cuopt.errors import CuoptError

def boundary(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Print a CuoptError as `cuopt: error: ...` on stderr and exit with its code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except CuoptError as exc:
            typer.echo(f"cuopt: error: {exc}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("cuopt: interrupted", err=True)
            raise typer.Exit(130) from None

    return wrapper


def command_line(name: str, help: str, commands: dict[str, Callable[..., Any]]) -> typer.Typer:
    """A typer app of `commands`, each behind the boundary (the `cuopt-train` app is built the same way)."""
    app = typer.Typer(name=name, help=help, no_args_is_help=True, add_completion=False,
                      pretty_exceptions_enable=False, rich_markup_mode=None)
    for command_name, fn in commands.items():
        app.command(command_name)(boundary(fn))
    return app


COMMANDS: dict[str, Callable[..., Any]] = {
    "init": init.command,
    "bench": bench.command,
    "rules": rules.command,
    "rewrites": rewrites.command,
    "check": check.command,
    "optimize": optimize.command,
    "explain": explain.command,
    "capture": capture.command,
}

app = command_line("cuopt", "Make CUDA kernels faster: search source rewrites, validate and time every candidate on "
                   "the local GPU.", COMMANDS)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"cuopt {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[Optional[bool], typer.Option("--version", callback=_version, is_eager=True,
                                                    help="Print the version and exit.")] = None,
) -> None:
    """cuopt: a command-line CUDA kernel optimizer."""


def main() -> None:
    app(prog_name="cuopt")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
