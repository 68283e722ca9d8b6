"""Timing summaries: median, interquartile spread, minimum."""
from __future__ import annotations

import pytest

from cuopt.evaluate.stats import summarize


def test_summary_of_samples() -> None:
    t = summarize([5.0, 1.0, 4.0, 2.0, 3.0])
    assert t.median_ms == 3.0
    assert t.spread == pytest.approx((4.0 - 2.0) / 3.0)
    assert t.min_ms == 1.0
    assert t.runs == 5
    assert t.describe() == "3 ms ±66.7% (5 runs)"


def test_identical_samples_have_no_spread() -> None:
    t = summarize([0.25] * 10)
    assert (t.median_ms, t.spread, t.min_ms, t.runs) == (0.25, 0.0, 0.25, 10)


def test_zero_median_does_not_divide_by_zero() -> None:
    assert summarize([0.0, 0.0, 0.0]).spread == 0.0


def test_single_sample() -> None:
    t = summarize([2.5])
    assert (t.median_ms, t.spread, t.min_ms, t.runs) == (2.5, 0.0, 2.5, 1)
