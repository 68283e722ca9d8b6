"""Summaries of timing samples."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np


@dataclass(frozen=True)
class Timing:
    median_ms: float
    spread: float  # interquartile range over the median
    min_ms: float
    runs: int

    def scaled(self, factor: float) -> Timing:
        """These times multiplied by `factor` (another GPU's times in this one's terms)."""
        return replace(self, median_ms=self.median_ms * factor, min_ms=self.min_ms * factor)

    def describe(self) -> str:
        return f"{self.median_ms:.4g} ms ±{self.spread * 100:.1f}% ({self.runs} runs)"


def summarize(samples: list[float]) -> Timing:
    a = np.asarray(samples, dtype=np.float64)
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return Timing(float(med), float((q3 - q1) / med) if med > 0 else 0.0, float(a.min()), int(a.size))
