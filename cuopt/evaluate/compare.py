"""Compare a candidate's output buffer with the reference, element by element."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuopt.evaluate.accuracy import Accuracy
from cuopt.evaluate.chunks import over_chunks
from cuopt.spec.dtypes import is_float

CHUNK = 1 << 20  # elements per pass (chunks run on threads: cuopt.evaluate.chunks)


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
    positions must agree, infinities must be equal); exact equality for integers. Works in chunks,
    on threads, to bound memory and time."""
    if same_bits(out, ref):
        return Comparison(name, int(out.size), 0, -1, 0.0, 0.0)  # bitwise identical: the common case
    floats = is_float(out.dtype.name)  # bfloat16 included (numpy's kind for it is "V")

    def part(lo: int, hi: int) -> tuple[int, int, float, float]:
        """(mismatches, first bad index or -1, max abs, max rel) of elements [lo, hi)."""
        o, r = out[lo:hi], ref[lo:hi]
        max_abs = max_rel = 0.0
        if floats:
            o64, r64 = o.astype(np.float64), r.astype(np.float64, copy=False)
            finite = np.isfinite(o64) & np.isfinite(r64)
            every = bool(finite.all())  # the common case: no NaN or infinity, no masks needed
            abs_r = np.abs(r64)
            with np.errstate(invalid="ignore", over="ignore"):
                diff = np.abs(o64 - r64)
                allowed = atol + rtol * abs_r
                if slack is not None:
                    allowed += slack[lo:hi]
                if every:
                    bad = diff > allowed
                else:
                    nan_o, nan_r = np.isnan(o64), np.isnan(r64)
                    diff[~finite] = 0.0
                    bad = (nan_o != nan_r) | (~finite & ~nan_o & ~nan_r & (o64 != r64))
                    bad |= finite & (diff > allowed)
            if every or finite.any():
                d, denom = (diff, abs_r) if every else (diff[finite], abs_r[finite])
                max_abs = float(d.max(initial=0.0))
                max_rel = float((d / np.where(denom > 0, denom, 1.0)).max(initial=0.0))
        else:
            bad = o != r
            if bad.any():
                max_abs = float(np.abs(o.astype(np.float64) - r.astype(np.float64)).max())
        count = int(np.count_nonzero(bad))
        return count, lo + int(np.argmax(bad)) if count else -1, max_abs, max_rel

    parts = over_chunks(out.size, CHUNK, part)
    firsts = [p[1] for p in parts if p[1] >= 0]
    return Comparison(name, int(out.size), sum(p[0] for p in parts), firsts[0] if firsts else -1,
                      max((p[2] for p in parts), default=0.0), max((p[3] for p in parts), default=0.0))
