"""The compile options shared by the commands that read CUDA files: `-I`, `-D`, `--nvcc-flag`."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from cuopt.compile_settings import CompileSettings, from_command_line

Include = Annotated[Optional[list[Path]], typer.Option(
    "--include", "-I", metavar="DIR", help="Search DIR for #include files, as nvcc -I (repeatable; after the "
    "directories of pyproject.toml [tool.cuopt] and the spec's [compile]).")]
Define = Annotated[Optional[list[str]], typer.Option(
    "--define", "-D", metavar="NAME[=VALUE]", help="Define a macro, as nvcc -D (repeatable; overrides the "
    "same name in pyproject.toml [tool.cuopt] and the spec's [compile]).")]
NvccFlag = Annotated[Optional[list[str]], typer.Option(
    "--nvcc-flag", metavar="FLAG", help="Pass FLAG to nvcc, e.g. --nvcc-flag=-lineinfo (repeatable).")]


def settings(include: list[Path] | None, define: list[str] | None, nvcc_flag: list[str] | None) -> CompileSettings:
    """The command line's settings (paths relative to the current directory)."""
    return from_command_line(include or [], define or [], nvcc_flag or [])
