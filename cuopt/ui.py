"""Terminal output: rich consoles and JSON. Emoji codes are off: file and kernel names are the
user's text, and `seismic.cu:wave: ...` must not print a waving hand."""
from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console


def console() -> Console:
    """stdout console; when not a terminal, wide enough that tables do not wrap."""
    out = Console(highlight=False, soft_wrap=False, emoji=False)
    if not out.is_terminal:
        out = Console(highlight=False, soft_wrap=False, width=160, emoji=False)
    return out


def err_console() -> Console:
    """stderr console; when not a terminal, lines are not wrapped (file:line:col stays whole)."""
    err = Console(stderr=True, highlight=False, emoji=False)
    if not err.is_terminal:
        err = Console(stderr=True, highlight=False, soft_wrap=True, width=400, emoji=False)
    return err


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")
    sys.stdout.flush()


def warn(message: str) -> None:
    err_console().print(f"[yellow]warning:[/yellow] {message}", markup=True, highlight=False)


def fmt_ms(ms: float | None) -> str:
    if ms is None:
        return "-"
    return f"{ms * 1e3:.1f} µs" if ms < 1 else f"{ms:.3f} ms"
