"""The budget strategies: equal shares, and headroom (minimums first, the rest by expected gain per
second, water-filling)."""
from __future__ import annotations

import math

import pytest

from cuopt.errors import CuoptError
from cuopt.optimization.jobs import confirm_reserve
from cuopt.optimization.result import Probe
from cuopt.optimization.schedule import (DEFAULT_HEADROOM, MIN_CANDIDATES, TAU_EVALS, Equal, Headroom,
                                         expected_gain, first_round_s, minimum_s, schedule, water_fill)


def probe(setup: float = 2.0, each: float = 1.0, best: float = 1.0, floor: float | None = 0.1,
          exhausted: bool = False) -> Probe:
    return Probe(2.0, setup, each, MIN_CANDIDATES, best, exhausted, floor)


def test_equal_gives_every_kernel_the_same_share() -> None:
    shares = Equal().shares({"a": None, "b": probe()}, 100.0)
    assert [s.seconds for s in shares.values()] == [50.0, 50.0]


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


def test_headroom_gives_every_kernel_its_minimum_and_more_where_it_pays() -> None:
    probes = {"heavy": probe(setup=20.0, each=5.0, best=10.0, floor=0.5),
              "light": probe(setup=1.0, each=0.5, best=1.0, floor=0.5),
              "done": probe(exhausted=True), "at-floor": probe(best=0.1, floor=0.1)}
    shares = Headroom().shares(probes, 300.0)
    for name, p in probes.items():
        base = p.setup_s + confirm_reserve(0.0, p.eval_s)
        assert shares[name].seconds >= base - 1e-9 and shares[name].minimum == pytest.approx(base)
    assert sum(s.seconds for s in shares.values()) == pytest.approx(300.0, rel=1e-6)
    assert shares["done"].seconds == pytest.approx(shares["done"].minimum)  # nothing left to find
    assert shares["at-floor"].seconds == pytest.approx(shares["at-floor"].minimum)
    assert shares["heavy"].seconds > shares["heavy"].minimum and shares["light"].seconds > shares["light"].minimum


def test_headroom_says_which_kernels_the_budget_cannot_cover() -> None:
    probes = {"a": probe(setup=10.0, best=4.0), "b": probe(setup=10.0, best=1.0, floor=0.9)}
    shares = Headroom().shares(probes, 16.0)
    assert shares["a"].seconds > 0  # the larger expected gain per second of its minimum comes first
    assert shares["b"].seconds == 0 and "too small" in shares["b"].note and "16 s" in shares["b"].note  # 10 s of setup, 6 s to confirm


def test_the_minimum_round_leaves_room_for_the_others() -> None:
    assert first_round_s(100.0, 10) == 20.0
    assert first_round_s(100.0, 1) == 50.0
    assert minimum_s(probe(setup=2.0, each=1.0)) == pytest.approx(2.0 + MIN_CANDIDATES + confirm_reserve(0.0, 1.0))


def test_an_unknown_schedule_is_an_error() -> None:
    with pytest.raises(CuoptError, match="--schedule 'fair': expected one of headroom, equal"):
        schedule("fair")
