"""Compare a candidate's output buffer with the reference, element by element."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuopt.evaluate.accuracy import Accuracy

CHUNK = 1 << 22


@dataclass(frozen=True)
class Comparison:
    name: str
    elements: int
    mismatches: int
    first_bad: int  # -1 when none
    max_abs: float
    max_rel: float
    accuracy: Accuracy | None = None  # against the float64 reference, when there is one

    @property
    def ok(self) -> bool:
        return self.mismatches == 0 and (self.accuracy is None or self.accuracy.ok)

    def describe(self) -> str:
        against = f"; {self.accuracy.describe()}" if self.accuracy is not None else ""
        if self.mismatches == 0:
            status = "ok" if self.ok else "wrong-answer"
            return f"{self.name}: {status} (max abs err {self.max_abs:.3g}, max rel err {self.max_rel:.3g}{against})"
        return (f"{self.name}: {self.mismatches} of {self.elements} elements differ, first at index "
                f"{self.first_bad} (max abs err {self.max_abs:.3g}, max rel err {self.max_rel:.3g}{against})")


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays hold the same dtype, shape and bytes (NaN payloads and signed zeros
    included), compared a whole element at a time."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    unit = np.dtype(f"u{a.dtype.itemsize}") if a.dtype.itemsize in (1, 2, 4, 8) else np.dtype(np.uint8)
    return bool(np.array_equal(a.view(unit), b.view(unit)))


def compare(name: str, out: np.ndarray, ref: np.ndarray, rtol: float, atol: float,
            slack: np.ndarray | None = None) -> Comparison:
    """|out - ref| <= atol + rtol * |ref| (+ slack, per element, when given) for floats (NaN
    positions must agree, infinities must be equal); exact equality for integers. Works in chunks
    to bound memory."""
    if same_bits(out, ref):
        return Comparison(name, int(out.size), 0, -1, 0.0, 0.0)  # bitwise identical: the common case
    mismatches, first, max_abs, max_rel = 0, -1, 0.0, 0.0
    is_float = out.dtype.kind == "f"
    for lo in range(0, out.size, CHUNK):
        o, r = out[lo:lo + CHUNK], ref[lo:lo + CHUNK]
        if is_float:
            o64, r64 = o.astype(np.float64), r.astype(np.float64)
            nan_o, nan_r = np.isnan(o64), np.isnan(r64)
            finite = np.isfinite(o64) & np.isfinite(r64)
            with np.errstate(invalid="ignore", over="ignore"):
                diff = np.abs(o64 - r64)
                diff[~finite] = 0.0
                bad = (nan_o != nan_r) | (~finite & ~nan_o & ~nan_r & (o64 != r64))
                allowed = atol + rtol * np.abs(r64)
                if slack is not None:
                    allowed = allowed + slack[lo:lo + CHUNK]
                bad |= finite & (diff > allowed)
            if finite.any():
                max_abs = max(max_abs, float(diff.max()))
                denom = np.abs(r64[finite])
                rel = diff[finite] / np.where(denom > 0, denom, 1.0)
                max_rel = max(max_rel, float(rel.max()))
        else:
            bad = o != r
            if bad.any():
                d = np.abs(o.astype(np.float64) - r.astype(np.float64))
                max_abs = max(max_abs, float(d.max()))
        count = int(np.count_nonzero(bad))
        if count and first < 0:
            first = lo + int(np.argmax(bad))
        mismatches += count
    return Comparison(name, int(out.size), mismatches, first, max_abs, max_rel)
