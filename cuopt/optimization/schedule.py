"""How one command's budget is split between its kernels: strategies behind one Protocol, in a
plain registry (`SCHEDULES`), chosen with `--schedule`.

`headroom` (the default) first gives every kernel a minimum round: its baseline and
`MIN_CANDIDATES` candidates. What that round measured (the cost of a candidate, the roofline
floor, whether the tree is exhausted) sets each kernel's share of the rest: a kernel is expected
to gain `g (1 - exp(-n / TAU_EVALS))` in log speedup after `n` more evaluations, `g` being its
distance to the roofline floor, and the seconds are split so that the last second of every kernel
buys the same expected gain (water-filling). `equal` gives every kernel the same share, in one
round, as cuopt did before."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from cuopt.optimization.jobs import confirm_reserve
from cuopt.optimization.result import Probe

MIN_CANDIDATES = 4  # the minimum round: the baseline and this many candidates
TAU_EVALS = 16.0  # evaluations over which a kernel's remaining expected gain falls by a factor e
DEFAULT_HEADROOM = math.log(4.0)  # expected log speedup of a kernel whose roofline floor is unknown


@dataclass(frozen=True)
class Share:
    """A kernel's seconds of one GPU for its last round (setup, search, confirmation)."""

    seconds: float
    minimum: float  # what its setup and confirmation alone need
    note: str = ""


class Schedule(Protocol):
    minimum_round: bool  # whether every kernel first gets a minimum round (no confirmation)

    def shares(self, probes: dict[str, Probe | None], capacity_s: float) -> dict[str, Share]:
        """Seconds per kernel (by name) out of `capacity_s` GPU-seconds; `probes` holds what the
        minimum round measured (None for each kernel without one)."""
        ...


class Equal:
    """The same share for every kernel, in one round."""

    minimum_round = False

    def shares(self, probes: dict[str, Probe | None], capacity_s: float) -> dict[str, Share]:
        each = capacity_s / max(1, len(probes))
        return {name: Share(each, 0.0) for name in probes}


class Headroom:
    """A minimum round for every kernel, then the rest by expected gain per second (module doc)."""

    minimum_round = True

    def shares(self, probes: dict[str, Probe | None], capacity_s: float) -> dict[str, Share]:
        known = {n: p for n, p in probes.items() if p is not None}
        base = {n: p.setup_s + confirm_reserve(0.0, p.eval_s) for n, p in known.items()}
        gain = {n: expected_gain(p) for n, p in known.items()}
        out: dict[str, Share] = {}
        left = capacity_s
        for name in sorted(known, key=lambda n: (-gain[n] / max(base[n], 1e-3), base[n], n)):
            if base[name] <= left:
                left -= base[name]
                out[name] = Share(base[name], base[name])
            else:
                out[name] = Share(0.0, base[name], f"the budget is too small: it needs at least {base[name]:.0f} s "
                                                   f"more to be re-set up and confirmed")
        funded = {n: known[n] for n, s in out.items() if s.seconds > 0 and gain[n] > 0}
        for name, extra in water_fill({n: (gain[n], p.eval_s) for n, p in funded.items()}, left).items():
            out[name] = Share(out[name].seconds + extra, out[name].minimum)
        for name in probes:
            out.setdefault(name, Share(0.0, 0.0, "no minimum round"))
        return out


SCHEDULES: dict[str, type] = {"headroom": Headroom, "equal": Equal}


def schedule(name: str) -> Schedule:
    from cuopt.errors import CuoptError

    if name not in SCHEDULES:
        raise CuoptError(f"--schedule {name!r}: expected one of {', '.join(SCHEDULES)}")
    return SCHEDULES[name]()


def expected_gain(p: Probe) -> float:
    """The log speedup still to be had: to the roofline floor from the best so far (none when
    the tree is exhausted or the floor is reached)."""
    if p.exhausted or p.best_ms is None:
        return 0.0
    if p.floor_ms is None:
        return DEFAULT_HEADROOM
    return max(0.0, math.log(p.best_ms / p.floor_ms))


def minimum_s(p: Probe) -> float:
    """Seconds a kernel needs for its baseline, `MIN_CANDIDATES` candidates and a confirmation."""
    return p.setup_s + MIN_CANDIDATES * p.eval_s + confirm_reserve(0.0, p.eval_s)


def first_round_s(capacity_s: float, pending: int) -> float:
    """The time cap of one kernel's minimum round: twice an equal share of what is left (a kernel
    stops at `MIN_CANDIDATES` candidates, so light ones leave most of it), at most half of it."""
    return min(capacity_s / 2, 2 * capacity_s / max(1, pending))


def water_fill(kernels: dict[str, tuple[float, float]], seconds: float) -> dict[str, float]:
    """Split `seconds` between kernels given as (expected gain g, seconds per evaluation e) so that
    the marginal gain of `g (1 - exp(-s / (TAU_EVALS e)))` is equal wherever s > 0."""
    rate = {n: (g / (TAU_EVALS * e), TAU_EVALS * e) for n, (g, e) in kernels.items() if g > 0 and e > 0}
    if not rate or seconds <= 0:
        return {n: 0.0 for n in kernels}

    def spent(lam: float) -> dict[str, float]:
        return {n: max(0.0, t * math.log(a / lam)) for n, (a, t) in rate.items()}

    lo, hi = 1e-12, max(a for a, _ in rate.values())  # at hi nothing is spent
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        if sum(spent(mid).values()) > seconds:
            lo = mid
        else:
            hi = mid
    out = spent(hi)
    return {n: out.get(n, 0.0) for n in kernels}
