"""Small helpers shared by several test modules."""
from __future__ import annotations

from dataclasses import dataclass

from typer.testing import CliRunner, Result

from cuopt.cli import app


def cuopt(*args: str) -> Result:
    """Run the CLI in-process."""
    return CliRunner().invoke(app, list(args))


def one_error_line(result: Result) -> str:
    """The single line a CuoptError becomes; no traceback anywhere."""
    assert "Traceback" not in result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


@dataclass(frozen=True)
class Action:
    """What the search and the policies read of a rewrite."""

    id: str
    rule: str
    line: int


@dataclass(frozen=True)
class Offer:
    action: Action
