"""The accuracy criterion: a candidate's error against a float64 reference may exceed the original
kernel's own error by no more than the spec's tolerance at any element, nor be more than a small
factor of the original's error overall, where the output has enough elements for the original's
error to be a stable measure (docs/evaluator.md)."""
from __future__ import annotations

from dataclasses import dataclass

from typing import Iterator

import numpy as np

FACTOR = 4.0  # how much larger than the original's error a candidate's error may be
FLOOR_ULPS = 4.0  # errors below this many units in the last place always pass the factor test
MIN_ELEMENTS = 32  # outputs with fewer finite elements are judged by the tolerance alone
CHUNK = 1 << 22  # elements per pass of `error`
EPS = {"float32": 2.0 ** -23, "float64": 2.0 ** -52}  # one unit in the last place at 1.0


@dataclass(frozen=True)
class Error:
    """How far an output is from the float64 reference, per element and norm-wise.

    `max_rel`: the largest |out - ref| / max(|ref|, mean |ref|) (each element relative to itself,
    but never to less than the buffer's typical magnitude, so results near zero after cancellation
    do not divide by nearly nothing); `norm`: ||out - ref||_2 / ||ref||_2; `elements`: how many
    finite elements were measured."""

    max_abs: float
    max_rel: float
    norm: float
    elements: int

    def describe(self) -> str:
        return f"max rel err {self.max_rel:.3g}, norm-wise {self.norm:.3g}"


@dataclass(frozen=True)
class Accuracy:
    """A candidate's error and the original's, both against the float64 reference."""

    candidate: Error
    original: Error
    eps: float

    @property
    def max_rel_bound(self) -> float:
        return max(FACTOR * self.original.max_rel, FLOOR_ULPS * self.eps)

    @property
    def norm_bound(self) -> float:
        return max(FACTOR * self.original.norm, FLOOR_ULPS * self.eps)

    @property
    def within_factor(self) -> bool:
        """Whether the candidate's errors are within the factor test's bounds."""
        return self.candidate.max_rel <= self.max_rel_bound and self.candidate.norm <= self.norm_bound

    @property
    def factor_applies(self) -> bool:
        """Whether the original's error is a stable enough measure to hold a candidate to: one
        element is one draw of it, and two equally accurate sums differ by more than FACTOR there
        in about one draw in nine (docs/evaluator.md)."""
        return min(self.candidate.elements, self.original.elements) >= MIN_ELEMENTS

    @property
    def ok(self) -> bool:
        return not self.factor_applies or self.within_factor

    def describe(self) -> str:
        verdict = "" if self.ok else (f"less accurate than the original (allowed: max rel err "
                                      f"{self.max_rel_bound:.3g}, norm-wise {self.norm_bound:.3g}); ")
        few = "" if self.factor_applies else f" ({self.candidate.elements} elements: judged by the tolerance alone)"
        return f"{verdict}vs float64: {self.candidate.describe()}; original: {self.original.describe()}{few}"


def error(out: np.ndarray, ref: np.ndarray) -> Error:
    """The error of `out` against `ref`, over the elements where both are finite. Two passes in
    chunks (the typical magnitude first, then the relative errors), so that no full-size float64
    copy of either array is made."""
    o_all, r_all = out.ravel(), ref.ravel()
    count, size_sum, ref_sq, err_sq, max_abs = 0, 0.0, 0.0, 0.0, 0.0
    for o, r in _finite_chunks(o_all, r_all):
        diff = np.abs(o - r)
        count += o.size
        size_sum += float(np.abs(r).sum())
        ref_sq += float(np.dot(r, r))
        err_sq += float(np.dot(diff, diff))
        max_abs = max(max_abs, float(diff.max(initial=0.0)))
    if count == 0:
        return Error(0.0, 0.0, 0.0, 0)
    typical = size_sum / count
    max_rel = 0.0
    for o, r in _finite_chunks(o_all, r_all):
        scale = np.maximum(np.abs(r), typical)
        diff = np.abs(o - r)
        rel = np.divide(diff, scale, out=np.zeros_like(diff), where=scale > 0)
        max_rel = max(max_rel, float(rel.max(initial=0.0)))
    ref_norm, err_norm = float(np.sqrt(ref_sq)), float(np.sqrt(err_sq))
    norm = err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else float("inf"))
    return Error(max_abs, max_rel, norm, count)


def _finite_chunks(out: np.ndarray, ref: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Both arrays in float64, a chunk at a time, keeping the elements where both are finite."""
    for lo in range(0, out.size, CHUNK):
        o, r = out[lo:lo + CHUNK].astype(np.float64), ref[lo:lo + CHUNK].astype(np.float64)
        finite = np.isfinite(o) & np.isfinite(r)
        if not finite.all():
            o, r = o[finite], r[finite]
        yield o, r


def own_error(original: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """The original's error at each element, |original - ref| (zero where either is not finite): the
    room a candidate gets beyond the spec's tolerance, so that a tolerance tighter than the
    original's own error does not reject variants that are as accurate as it."""
    o, r = original.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(o - r)
    diff[~(np.isfinite(o) & np.isfinite(r))] = 0.0
    return diff


def judge(out: np.ndarray, ref: np.ndarray, original: Error, dtype: str) -> Accuracy:
    """`out`'s accuracy against the float64 reference, next to the original's."""
    return Accuracy(error(out, ref), original, EPS[dtype])


def worst(accuracies: list[Accuracy]) -> dict[str, float] | None:
    """The largest errors against float64 over some outputs, the candidate's and the original's."""
    if not accuracies:
        return None
    return {"max_rel": max(a.candidate.max_rel for a in accuracies), "norm": max(a.candidate.norm for a in accuracies),
            "original_max_rel": max(a.original.max_rel for a in accuracies),
            "original_norm": max(a.original.norm for a in accuracies)}
