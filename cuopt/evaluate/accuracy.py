"""The accuracy criterion: a candidate's error against a float64 reference may exceed the original
kernel's own error by no more than the spec's tolerance at any element, nor be more than a small
factor of the original's error overall, where the output has enough elements for the original's
error to be a stable measure (docs/evaluator.md)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuopt.evaluate.chunks import over_chunks

FACTOR = 4.0  # how much larger than the original's error a candidate's error may be
FLOOR_ULPS = 4.0  # errors below this many units in the last place always pass the factor test
MIN_ELEMENTS = 32  # outputs with fewer finite elements are judged by the tolerance alone
CHUNK = 1 << 20  # elements per pass of `error` (chunks run on threads: cuopt.evaluate.chunks)
EPS = {"bfloat16": 2.0 ** -7, "float16": 2.0 ** -10, "float32": 2.0 ** -23,
       "float64": 2.0 ** -52}  # one unit in the last place at 1.0


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


@dataclass(frozen=True)
class Scale:
    """A float64 reference's finite elements: how many, and the sum of their magnitudes, added
    chunk by chunk as `error` adds them. An output finite wherever the reference is has the same
    typical magnitude, so `error` then needs one pass instead of two."""

    count: int
    size_sum: float


def scale(ref: np.ndarray) -> Scale:
    """The scale of a float64 reference (one pass, once per problem)."""
    r_all = ref.ravel()

    def part(lo: int, hi: int) -> tuple[int, float]:
        r = r_all[lo:hi].astype(np.float64, copy=False)
        finite = np.isfinite(r)
        r = r if finite.all() else r[finite]
        return r.size, float(np.abs(r).sum())

    count, size_sum = 0, 0.0
    for n, size in over_chunks(r_all.size, CHUNK, part):
        count, size_sum = count + n, size_sum + size
    return Scale(count, size_sum)


def error(out: np.ndarray, ref: np.ndarray, known: Scale | None = None) -> Error:
    """The error of `out` against `ref`, over the elements where both are finite. In chunks on
    threads, so that no full-size float64 copy of either array is made: one pass when `known`
    (the reference's scale) holds for `out`, else two (the typical magnitude first, then the
    relative errors)."""
    o_all, r_all = out.ravel(), ref.ravel()
    guess = known.size_sum / known.count if known is not None and known.count else None

    def sums(lo: int, hi: int) -> tuple[int, float, float, float, float, float]:
        o, r = _finite(o_all[lo:hi], r_all[lo:hi])
        diff = np.abs(o - r)
        rel = _largest_rel(diff, r, guess) if guess is not None else 0.0
        return o.size, float(np.abs(r).sum()), float(np.dot(r, r)), float(np.dot(diff, diff)), \
            float(diff.max(initial=0.0)), rel

    count, size_sum, ref_sq, err_sq, max_abs, max_rel = 0, 0.0, 0.0, 0.0, 0.0, 0.0
    for n, size, rr, ee, top, rel in over_chunks(o_all.size, CHUNK, sums):  # summed in chunk order
        count, size_sum, ref_sq, err_sq = count + n, size_sum + size, ref_sq + rr, err_sq + ee
        max_abs, max_rel = max(max_abs, top), max(max_rel, rel)
    if count == 0:
        return Error(0.0, 0.0, 0.0, 0)
    if known is None or (count, size_sum) != (known.count, known.size_sum):
        typical = size_sum / count

        def largest_rel(lo: int, hi: int) -> float:
            o, r = _finite(o_all[lo:hi], r_all[lo:hi])
            return _largest_rel(np.abs(o - r), r, typical)

        max_rel = max(over_chunks(o_all.size, CHUNK, largest_rel), default=0.0)
    ref_norm, err_norm = float(np.sqrt(ref_sq)), float(np.sqrt(err_sq))
    norm = err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else float("inf"))
    return Error(max_abs, max_rel, norm, count)


def _largest_rel(diff: np.ndarray, ref: np.ndarray, typical: float) -> float:
    """The largest |out - ref| / max(|ref|, typical) of a chunk."""
    scale = np.maximum(np.abs(ref), typical)
    rel = np.divide(diff, scale, out=np.zeros_like(diff), where=scale > 0)
    return float(rel.max(initial=0.0))


def _finite(out: np.ndarray, ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both arrays in float64, keeping the elements where both are finite."""
    o, r = out.astype(np.float64), ref.astype(np.float64, copy=False)
    finite = np.isfinite(o) & np.isfinite(r)
    return (o, r) if finite.all() else (o[finite], r[finite])


def own_error(original: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """The original's error at each element, |original - ref| (zero where either is not finite): the
    room a candidate gets beyond the spec's tolerance, so that a tolerance tighter than the
    original's own error does not reject variants that are as accurate as it. Filled in chunks on
    threads."""
    o_all, r_all = original.ravel(), ref.ravel()
    slack = np.empty(o_all.size, np.float64)

    def part(lo: int, hi: int) -> None:
        o, r, d = o_all[lo:hi].astype(np.float64), r_all[lo:hi].astype(np.float64, copy=False), slack[lo:hi]
        with np.errstate(invalid="ignore", over="ignore"):
            np.subtract(o, r, out=d)
            np.abs(d, out=d)
        d[~(np.isfinite(o) & np.isfinite(r))] = 0.0

    over_chunks(o_all.size, CHUNK, part)
    return slack


def judge(out: np.ndarray, ref: np.ndarray, original: Error, dtype: str, known: Scale | None = None) -> Accuracy:
    """`out`'s accuracy against the float64 reference (of scale `known`, when given), next to the original's."""
    return Accuracy(error(out, ref, known), original, EPS[dtype])


def worst(accuracies: list[Accuracy]) -> dict[str, float] | None:
    """The largest errors against float64 over some outputs, the candidate's and the original's."""
    if not accuracies:
        return None
    return {"max_rel": max(a.candidate.max_rel for a in accuracies), "norm": max(a.candidate.norm for a in accuracies),
            "original_max_rel": max(a.original.max_rel for a in accuracies),
            "original_norm": max(a.original.norm for a in accuracies)}
