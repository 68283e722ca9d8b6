"""Wall-clock and evaluation budgets."""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Callable

from cuopt.errors import CuoptError

_UNITS = {"s": 1, "m": 60, "h": 3600}


def parse_duration(text: str) -> float:
    """`30s`, `10m`, `1h`, `1h30m` or plain seconds -> seconds."""
    raw = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", raw):
        raw += "s"
    parts = re.findall(r"(\d+(?:\.\d+)?)([smh])", raw)
    if not parts or "".join(f"{n}{u}" for n, u in parts) != raw:
        raise CuoptError(f"--budget {text!r}: expected a duration such as 30s, 10m or 1h")
    seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise CuoptError(f"--budget {text!r}: must be positive")
    return seconds


@dataclass(eq=False)
class Budget:
    """Stops the search at a deadline or after a number of evaluations, or when asked to. With
    `min_evals`, the deadline waits for that many evaluations (never past `hard_seconds`); when the
    deadline comes, `extend` may give more seconds (0: none); before it, `enough` (asked once per
    new evaluation past the minimum) may end the search early by saying why."""

    seconds: float
    max_evals: int | None = None
    start: float = field(default_factory=time.monotonic)
    evaluations: int = 0
    stopped: str = ""  # why the search stopped early (interrupt)
    min_evals: int = 0
    hard_seconds: float | None = None
    extend: Callable[[], float] | None = None
    enough: Callable[[], str] | None = None
    _reviewed: int = -1

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.start

    @property
    def remaining(self) -> float:
        return max(0.0, self.seconds - self.elapsed)

    def exhausted(self) -> bool:
        if self.stopped:
            return True
        if self.max_evals is not None and self.evaluations >= self.max_evals:
            return True
        elapsed = self.elapsed
        if elapsed < self.seconds:
            if self.enough is not None and self.evaluations >= self.min_evals and self.evaluations != self._reviewed:
                self._reviewed = self.evaluations
                self.stopped = self.enough()
            return bool(self.stopped)
        if self.hard_seconds is not None and elapsed >= self.hard_seconds:
            return True
        if self.evaluations < self.min_evals:
            return False
        more = self.extend() if self.extend is not None else 0.0
        if more > 0:
            self.seconds = elapsed + more
            return False
        return True

    def share(self, parts: int) -> float:
        """An equal share of what is left, for one of `parts` remaining jobs."""
        return self.remaining / max(1, parts)
