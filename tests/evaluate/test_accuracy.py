"""The accuracy criterion on numpy emulations of float32 sums (tests/evaluate/float_sums.py)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from cuopt.evaluate.accuracy import EPS, FACTOR, FLOOR_ULPS, MIN_ELEMENTS, error, judge, scale, worst
from cuopt.evaluate.compare import Comparison, compare

from tests.evaluate import float_sums

ROWS = 256


def verdict(out: np.ndarray, ref: np.ndarray, original: np.ndarray, tol: float) -> Comparison:
    """What the worker decides for a candidate `out` with the float64 reference `ref`."""
    return replace(compare("y", out, ref, tol, tol), accuracy=judge(out, ref, error(original, ref), "float32"))


@pytest.fixture(scope="module", params=[0.0, -1.0], ids=["uniform(0,1)", "uniform(-1,1)"])
def sums(request: pytest.FixtureRequest) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    return float_sums.variants(request.param, rows=ROWS)


@pytest.mark.parametrize("name", ["tree", "warp per row", "block per row", "sequential"])
def test_reordered_sums_are_accepted_against_a_sequential_original(sums, name: str) -> None:
    ref, outs = sums
    c = verdict(outs[name], ref, outs["sequential"], 1e-4)
    assert c.ok, c.describe()


@pytest.mark.parametrize("name", ["drops the last term", "reads one past the row"])
def test_a_dropped_or_extra_term_is_rejected_even_with_a_loose_tolerance(sums, name: str) -> None:
    ref, outs = sums
    c = verdict(outs[name], ref, outs["sequential"], 1e-3)
    assert c.mismatches == 0 or ref.min() < 0  # positive inputs: the tolerance alone lets it through
    assert not c.ok
    assert "less accurate than the original" in c.describe()


def test_the_old_check_rejects_a_reordering_the_new_one_accepts() -> None:
    """The issue's matvec: A x with 16384 columns of the default uniform(-1, 1) inputs, tolerance 1e-4;
    among 16384 rows a few sum to nearly zero, where atol alone bounds the error. Here the last
    term of each row cancels the others, so every row is such a row."""
    n = float_sums.N
    products = float_sums.terms(-1.0, rows=64)[:, :n] * float_sums.terms(-1.0, seed=2, rows=1)[:, :n]
    products[:, -1] = -products[:, :-1].astype(np.float64).sum(axis=1)
    exact = products.astype(np.float64).sum(axis=1)
    seq, warp = float_sums.sequential(products), float_sums.strided(products, 32)
    assert not compare("y", warp, seq, 1e-4, 1e-4).ok  # against the float32 original: wrong-answer
    c = verdict(warp, exact, seq, 1e-4)
    assert c.ok, c.describe()


def test_an_exactly_rounded_kernel_is_not_held_to_zero() -> None:
    ref = np.random.default_rng(0).random(1000) + 0.5
    exact = ref.astype(np.float32)  # the original: every element correctly rounded
    off = np.nextafter(np.nextafter(exact, np.float32(2)), np.float32(2))  # two ulps up
    c = verdict(off, ref, exact, 1e-4)
    assert c.ok, c.describe()
    assert c.accuracy is not None and c.accuracy.max_rel_bound == FLOOR_ULPS * EPS["float32"]
    far = exact * np.float32(1 + 16 * EPS["float32"])
    assert not verdict(far, ref, exact, 1e-4).ok


def test_the_bound_is_the_factor_times_the_original_error() -> None:
    ref = np.linspace(1.0, 2.0, 100)
    original = ref * (1 + 1e-5)
    assert verdict(ref * (1 + (FACTOR - 0.5) * 1e-5), ref, original, 1e-3).ok
    assert not verdict(ref * (1 + (FACTOR + 0.5) * 1e-5), ref, original, 1e-3).ok


def test_one_bad_element_among_many_is_caught_per_element() -> None:
    ref = np.ones(100000)
    original = (ref * (1 + 1e-6)).astype(np.float32)
    out = original.copy()
    out[123] = 1 + 1e-4  # norm-wise this is small; per element it is 100x the original's error
    e = error(out, ref)
    assert e.norm < FACTOR * error(original, ref).norm
    assert not verdict(out, ref, original, 1e-3).ok


def test_results_near_zero_are_measured_against_the_typical_magnitude() -> None:
    ref = np.array([1000.0, -1000.0, 1e-9])
    out = ref + np.array([1e-4, 1e-4, 1e-4])  # 1e-4 off a cancelled result is no relative disaster
    assert error(out, ref).max_rel == pytest.approx(1e-4 / (2000.0 / 3), rel=1e-6)


def test_non_finite_elements_are_left_to_the_tolerance_check() -> None:
    ref = np.array([1.0, np.inf, 2.0])
    out = np.array([1.0, np.inf, np.nan], np.float32)
    assert error(out, ref).max_abs == 0.0
    assert not verdict(out, ref, out, 1e-3).ok  # NaN where the reference has a number


def test_an_all_zero_reference_only_accepts_zeros() -> None:
    ref = np.zeros(10)
    assert error(np.zeros(10, np.float32), ref).norm == 0.0
    assert error(np.full(10, 1e-30, np.float32), ref).norm == float("inf")


def test_worst_takes_the_largest_errors() -> None:
    ref = np.ones(4)
    a = judge(ref * 1.001, ref, error(ref * 1.0001, ref), "float32")
    b = judge(ref * 1.01, ref, error(ref * 1.00001, ref), "float32")
    w = worst([a, b])
    assert w is not None and w["max_rel"] == pytest.approx(0.01) and w["original_max_rel"] == pytest.approx(1e-4)
    assert worst([]) is None


def test_a_single_sum_in_another_order_is_judged_by_the_tolerance_alone() -> None:
    """reduce_sum's float atomics: the same block partials added in another order. On one element
    the original's error is a single draw; here the second order is more than FACTOR times the
    first's error, although neither order is the less accurate kernel."""
    rng = np.random.default_rng(3)
    partials = (rng.random((1, 4096)) * 256).astype(np.float32)
    ref = partials.astype(np.float64).sum(axis=1)
    orders = [float_sums.in_order(partials, rng.permutation(4096)) for _ in range(40)]
    errors = [error(o, ref).max_rel for o in orders]
    lucky, unlucky = orders[int(np.argmin(errors))], orders[int(np.argmax(errors))]
    assert max(errors) > FACTOR * min(errors) and max(errors) > FLOOR_ULPS * EPS["float32"]
    c = verdict(unlucky, ref, lucky, 1e-4)
    assert c.ok, c.describe()
    assert "judged by the tolerance alone" in c.describe()
    assert not verdict(unlucky * np.float32(1.001), ref, lucky, 1e-4).ok  # the tolerance still holds


def test_the_factor_applies_from_min_elements_on() -> None:
    ref = np.linspace(1.0, 2.0, MIN_ELEMENTS)
    original = ref * (1 + 1e-5)
    assert not verdict(ref * (1 + 8e-5), ref, original, 1e-3).ok
    assert verdict(ref[:-1] * (1 + 8e-5), ref[:-1], original[:-1], 1e-3).ok


@pytest.mark.parametrize("holes", [False, True])
def test_one_pass_with_the_references_scale_equals_two(holes: bool) -> None:
    """Given the reference's scale, `error` measures in one pass what two passes measure; where the
    output has NaN or infinities the reference has not, the scale does not hold and two passes run."""
    rng = np.random.default_rng(11)
    ref = rng.standard_normal(5000)
    ref[[3, 40, 7]] = [np.nan, np.inf, 1e4]  # element 7 alone triples the typical magnitude
    out = (ref * (1 + 1e-6 * rng.standard_normal(5000))).astype(np.float32)
    if holes:
        out[[7, 4000]] = [np.nan, -np.inf]
    known = scale(ref)
    assert known.count == 4998
    assert error(out, ref, known) == error(out, ref)
