"""What `cuopt check` reports: diagnostics located at file:line:col, the codes they carry, and
the text and JSON renderings (SARIF lives in cuopt/lint/sarif.py)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable


@dataclass(frozen=True)
class Diagnostic:
    """One problem or finding; line and column are 1-based, None when unknown."""

    path: str
    line: int | None
    column: int | None
    severity: str  # error | warning | note
    code: str  # a rule id for findings, else parse | spec | compile | ignore | lint | read
    message: str

    @property
    def location(self) -> str:
        """`path:line:col`, leaving out what is unknown."""
        if self.line is None:
            return self.path
        return f"{self.path}:{self.line}" + (f":{self.column}" if self.column is not None else "")

    def __str__(self) -> str:
        return f"{self.location}: {self.severity}: {self.code}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Code:
    """A diagnostic code as documented to users (and to SARIF consumers)."""

    id: str
    title: str  # one line
    help: str  # a paragraph: what it means and what to do
    level: str  # the usual severity


def sort_key(d: Diagnostic) -> tuple[str, int, int]:
    return d.path, d.line or 0, d.column or 0


def count(diagnostics: Iterable[Diagnostic], severity: str) -> int:
    return sum(1 for d in diagnostics if d.severity == severity)


def summary(diagnostics: list[Diagnostic], files: int) -> str:
    """`3 files: 0 errors, 2 warnings` (notes added when there are any)."""
    def plural(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    parts = [plural(count(diagnostics, "error"), "error"), plural(count(diagnostics, "warning"), "warning")]
    notes = count(diagnostics, "note")
    if notes:
        parts.append(plural(notes, "note"))
    return f"{plural(files, 'file')}: {', '.join(parts)}"


def to_text(diagnostics: list[Diagnostic], files: int) -> str:
    """One `path:line:col: severity: code: message` line each, then the summary."""
    return "".join(f"{d}\n" for d in diagnostics) + summary(diagnostics, files) + "\n"


def to_json(diagnostics: list[Diagnostic]) -> list[dict[str, Any]]:
    return [d.to_dict() for d in diagnostics]
