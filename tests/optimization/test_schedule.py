"""The budget strategies: equal shares, and headroom (minimums first, the rest by expected gain per
second, water-filling)."""
from __future__ import annotations

import math

import pytest

from cuopt.errors import CuoptError
from cuopt.optimization.result import Probe
from cuopt.optimization.schedule import (DEFAULT_HEADROOM, MIN_CANDIDATES, MIN_EXTENSION_S, TAU_EVALS, Equal, Headroom,
                                         confirm_reserve, expected_gain, minimum_s, schedule, water_fill)


def probe(setup: float = 2.0, each: float = 1.0, best: float = 1.0, floor: float | None = 0.1,
          exhausted: bool = False, since_best: int = 0) -> Probe:
    return Probe(2.0, setup, each, MIN_CANDIDATES, best, exhausted, floor, since_best)


def test_both_start_every_kernel_with_an_equal_share_of_what_is_left() -> None:
    assert Equal().share(100.0, 4) == Headroom().share(100.0, 4) == 25.0
    assert Equal().min_evals == 0 and Headroom().min_evals == MIN_CANDIDATES
    assert Equal().extension(probe(), None, 0, 1000.0, 10.0) == 0.0


def test_expected_gain_is_the_distance_to_the_floor() -> None:
    assert expected_gain(probe(best=1.0, floor=0.1)) == pytest.approx(math.log(10))
    assert expected_gain(probe(best=0.1, floor=0.1)) == 0.0
    assert expected_gain(probe(exhausted=True)) == 0.0
    assert expected_gain(probe(floor=None)) == DEFAULT_HEADROOM


def test_water_fill_equalises_the_marginal_gain() -> None:
    kernels = {"cheap": (2.0, 0.5), "dear": (2.0, 4.0), "flat": (0.2, 1.0)}
    split = water_fill(kernels, 200.0)
    assert sum(split.values()) == pytest.approx(200.0, rel=1e-6)
    marginal = {n: g / (TAU_EVALS * e) * math.exp(-split[n] / (TAU_EVALS * e))
                for n, (g, e) in kernels.items() if split[n] > 0}
    assert len(marginal) >= 2 and max(marginal.values()) == pytest.approx(min(marginal.values()), rel=1e-4)
    assert split["dear"] > split["flat"]  # the same gain at 8x the cost still beats a tenth of the gain


def test_water_fill_spends_nothing_without_gain() -> None:
    assert water_fill({"a": (0.0, 1.0)}, 50.0) == {"a": 0.0}
    assert water_fill({}, 50.0) == {}


def test_headroom_extends_a_search_with_headroom_from_time_given_back() -> None:
    live = probe(each=1.0, best=1.0, floor=0.1)
    more = Headroom().extension(live, None, 0, 200.0, 20.0)  # nobody waits: it may take what is left
    assert MIN_EXTENSION_S <= more <= 200.0
    assert Headroom().extension(live, None, 2, 200.0, 20.0) > 0  # 160 s left after two shares of 20 s
    assert Headroom().extension(live, None, 10, 200.0, 20.0) == 0.0  # ten shares of 20 s: none to spare


def test_headroom_does_not_extend_what_has_nothing_left_to_gain() -> None:
    assert Headroom().extension(probe(best=0.1, floor=0.1), None, 0, 500.0, 20.0) == 0.0  # at its floor
    assert Headroom().extension(probe(exhausted=True), None, 0, 500.0, 20.0) == 0.0
    fresh = Headroom().extension(probe(), None, 2, 100.0, 10.0)
    stale = Headroom().extension(probe(since_best=int(TAU_EVALS)), None, 2, 100.0, 10.0)
    assert fresh > stale  # no improvement for a while: less expected


def test_headroom_resumes_the_searches_still_expecting_a_gain_by_gain_per_second() -> None:
    stopped = {"far": probe(best=1.0, floor=0.1), "near": probe(best=0.102, floor=0.1),
               "stale": probe(best=1.0, floor=0.1, since_best=int(8 * TAU_EVALS)), "done": probe(exhausted=True)}
    seconds = Headroom().resume(stopped, 100.0, 0.03)
    assert set(seconds) == {"far"}  # within 3% of its floor, no gain for long, or exhausted: no resume
    fixed = stopped["far"].setup_s + confirm_reserve(0.0, stopped["far"].eval_s)
    assert seconds["far"] == pytest.approx(100.0, rel=1e-3) and seconds["far"] > fixed
    split = Headroom().resume({"far": probe(best=1.0, floor=0.1), "half": probe(best=0.3, floor=0.1)}, 100.0, 0.03)
    assert split["far"] > split["half"] > 0 and sum(split.values()) == pytest.approx(100.0, rel=1e-3)
    assert Headroom().resume({"far": probe()}, 5.0, 0.03) == {}  # less than its baseline and confirmation
    assert Equal().resume({"far": probe()}, 100.0, 0.03) == {}


def test_the_minimum_is_the_baseline_and_a_few_candidates() -> None:
    assert minimum_s(probe(setup=2.0, each=1.0)) == pytest.approx(2.0 + MIN_CANDIDATES + confirm_reserve(0.0, 1.0))


def test_an_unknown_schedule_is_an_error() -> None:
    with pytest.raises(CuoptError, match="--schedule 'fair': expected one of headroom, equal"):
        schedule("fair")
