"""compare(): element-wise checks of a candidate's output against the reference."""
from __future__ import annotations

import numpy as np
import pytest

from cuopt.evaluate import compare as compare_module
from cuopt.evaluate.compare import compare, same_bits
from cuopt.spec.dtypes import numpy_dtype

NAN, INF = float("nan"), float("inf")


def cmp(out: list, ref: list, dtype: str = "float32", rtol: float = 0.0, atol: float = 0.0):
    return compare("y", np.array(out, numpy_dtype(dtype)), np.array(ref, numpy_dtype(dtype)), rtol, atol)


def test_identical_arrays() -> None:
    c = cmp([1.0, -2.0, 3.5], [1.0, -2.0, 3.5])
    assert c.ok and c.mismatches == 0 and c.first_bad == -1
    assert c.elements == 3
    assert (c.max_abs, c.max_rel) == (0.0, 0.0)
    assert c.describe() == "y: ok (max abs err 0, max rel err 0)"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_nan_positions_must_agree(dtype: str) -> None:
    assert cmp([1.0, NAN, 3.0], [1.0, NAN, 3.0], dtype).ok
    c = cmp([1.0, NAN, 3.0], [1.0, 2.0, 3.0], dtype, rtol=1e9, atol=1e9)
    assert (c.mismatches, c.first_bad) == (1, 1)
    c = cmp([1.0, 2.0, 3.0], [1.0, 2.0, NAN], dtype, rtol=1e9, atol=1e9)
    assert (c.mismatches, c.first_bad) == (1, 2)


def test_nan_does_not_poison_the_error_statistics() -> None:
    c = cmp([NAN, 1.5], [NAN, 1.0])
    assert c.mismatches == 1 and c.first_bad == 1
    assert c.max_abs == pytest.approx(0.5) and c.max_rel == pytest.approx(0.5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_infinities_must_be_equal(dtype: str) -> None:
    assert cmp([INF, -INF, 0.0], [INF, -INF, 0.0], dtype).ok
    c = cmp([INF, -INF, 1.0, 5.0], [-INF, -INF, INF, 5.0], dtype, rtol=1e9, atol=1e9)
    assert (c.mismatches, c.first_bad) == (2, 0)
    c = cmp([1e30], [INF], dtype, rtol=1e9, atol=1e9)
    assert c.mismatches == 1
    c = cmp([INF], [NAN], dtype, rtol=1e9, atol=1e9)
    assert c.mismatches == 1


def test_tolerance_boundary_is_inclusive() -> None:
    # |out - ref| <= atol + rtol * |ref|: with ref 1, rtol 0.5, atol 0.25 the bound is exactly 0.75
    edge = 1.75
    above = float(np.nextafter(edge, 2.0))
    assert cmp([edge], [1.0], "float64", rtol=0.5, atol=0.25).ok
    assert not cmp([above], [1.0], "float64", rtol=0.5, atol=0.25).ok
    assert cmp([-2.0 + -0.75], [-2.0], "float64", rtol=0.25, atol=0.25).ok  # bound uses |ref|
    assert not cmp([0.25 + 1e-12], [0.0], "float64", rtol=0.5, atol=0.25).ok


def test_relative_tolerance_scales_with_reference() -> None:
    assert cmp([1000.5], [1000.0], "float64", rtol=1e-3).ok
    assert not cmp([1.5], [1.0], "float64", rtol=1e-3).ok


def test_zero_tolerance_is_exact_for_floats() -> None:
    c = cmp([1.0, 2.0], [1.0, float(np.nextafter(np.float32(2.0), np.float32(3.0)))])
    assert (c.mismatches, c.first_bad) == (1, 1)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32", "uint64"])
def test_integers_are_exact_whatever_the_tolerance(dtype: str) -> None:
    assert cmp([1, 2, 3], [1, 2, 3], dtype).ok
    c = cmp([1, 2, 4, 9], [1, 2, 3, 9], dtype, rtol=1.0, atol=100.0)
    assert (c.mismatches, c.first_bad) == (1, 2)
    assert c.max_abs == 1.0


def test_unsigned_difference_does_not_wrap() -> None:
    c = cmp([0], [4294967295], "uint32")
    assert c.max_abs == 4294967295.0


def test_counts_and_first_bad() -> None:
    ref = np.zeros(100, np.float32)
    out = ref.copy()
    out[[17, 40, 99]] = 1.0
    c = compare("out", out, ref, 0.0, 0.5)
    assert (c.mismatches, c.first_bad, c.elements) == (3, 17, 100)
    assert c.describe() == "out: 3 of 100 elements differ, first at index 17 (max abs err 1, max rel err 1)"


def test_max_errors() -> None:
    c = cmp([1.1, 4.0, -2.0], [1.0, 2.0, -2.5], "float64", rtol=10.0)
    assert c.ok
    assert c.max_abs == pytest.approx(2.0)
    assert c.max_rel == pytest.approx(1.0)


def test_chunks_across_the_boundary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compare_module, "CHUNK", 4)
    ref = np.arange(10, dtype=np.float32)
    out = ref.copy()
    out[5] += 3.0
    out[9] += 1.0
    out[3] = np.nan
    c = compare("y", out, ref, 0.0, 0.0)
    assert (c.mismatches, c.first_bad, c.elements) == (3, 3, 10)
    assert c.max_abs == pytest.approx(3.0)
    assert c.max_rel == pytest.approx(3.0 / 5.0)


def test_chunks_first_bad_in_a_later_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compare_module, "CHUNK", 3)
    ref = np.arange(11, dtype=np.int32)
    out = ref.copy()
    out[[7, 10]] = -1
    c = compare("y", out, ref, 0.0, 0.0)
    assert (c.mismatches, c.first_bad) == (2, 7)
    assert c.max_abs == 11.0


def test_chunked_and_unchunked_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    ref = rng.standard_normal(1001).astype(np.float32)
    out = ref + rng.standard_normal(1001).astype(np.float32) * 1e-3
    out[[3, 500, 1000]] = [np.nan, np.inf, 7.0]
    whole = compare("y", out, ref, 1e-4, 1e-4)
    monkeypatch.setattr(compare_module, "CHUNK", 64)
    chunked = compare("y", out, ref, 1e-4, 1e-4)
    assert chunked == whole
    o, r = out.astype(np.float64), ref.astype(np.float64)
    expected_bad = ~(np.abs(o - r) <= 1e-4 + 1e-4 * np.abs(r))  # NaN and inf compare False: bad
    assert whole.mismatches == int(expected_bad.sum())
    assert whole.first_bad == int(np.argmax(expected_bad))


def test_empty_arrays() -> None:
    c = compare("y", np.zeros(0, np.float32), np.zeros(0, np.float32), 0.0, 0.0)
    assert c.ok and c.elements == 0 and c.first_bad == -1


def test_slack_widens_the_tolerance_element_by_element() -> None:
    ref = np.array([1.0, 2.0, 3.0], np.float64)
    out = np.array([1.5, 2.5, 3.0], np.float32)
    slack = np.array([0.5, 0.0, 0.0])
    c = compare("y", out, ref, 0.0, 1e-6, slack)
    assert (c.mismatches, c.first_bad) == (1, 1)


def test_same_bits_sees_nan_payloads_signed_zeros_dtypes_and_shapes() -> None:
    a = np.array([0.0, 1.5, np.nan], np.float32)
    assert same_bits(a, a.copy())
    other_nan = a.copy()
    other_nan.view(np.uint32)[2] ^= 1
    assert np.isnan(other_nan[2]) and not same_bits(a, other_nan)
    assert not same_bits(a, np.array([-0.0, 1.5, np.nan], np.float32))
    assert not same_bits(a, a.astype(np.float64))
    assert not same_bits(a, a[:2])
    assert same_bits(np.arange(3, dtype=np.uint8), np.arange(3, dtype=np.uint8))


def test_bf16_outputs_are_compared_as_floats_within_the_tolerance() -> None:
    """numpy's kind for ml_dtypes' bfloat16 is "V", not "f": a tolerance applies all the same."""
    assert cmp([1.0, 2.0], [1.0, 2.015625], "bfloat16", rtol=1.6e-2).ok  # one bf16 unit apart at 2
    c = cmp([1.0, 2.0], [1.0, 2.0625], "bfloat16", rtol=1.6e-2)  # four units apart
    assert (c.mismatches, c.first_bad) == (1, 1) and c.max_abs == 0.0625
