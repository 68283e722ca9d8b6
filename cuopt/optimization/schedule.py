"""How one command's budget is split between its kernels: strategies behind one Protocol, in a
plain registry (`SCHEDULES`), chosen with `--schedule`.

Every kernel starts with an equal share of the GPU-seconds left (kernels that finish early leave
theirs to the others). `headroom` (the default) adds two things. A minimum: a search does not stop
on time before its baseline and `MIN_CANDIDATES` candidates, so a kernel whose launches are 100x
slower than the others' is never left without evaluations (only the command's own deadline stops
it). Then it stops where it no longer pays: once the gain it may still expect (below) is less than
the speedup a confirmation needs, its share goes back to the others. And more where it pays: when a share runs out, the search is extended if it is still expected
to gain. A kernel is modelled to gain `g (1 - exp(-n / TAU_EVALS))` in log speedup over its next
`n` evaluations, `g` being its distance to the roofline floor, discounted by the evaluations since
its last improvement; the seconds left once every kernel still to come is sure of a share as
large as this one's (time that kernels finishing early gave back) are split between it and them
so that the last second of each buys the same expected gain (water-filling), and it gets its part.
Once every kernel has had its turn, what is left is split the same way between the searches that
their share stopped while they still expected a gain, and those resume (`resume`). `equal` is the
equal share alone, as cuopt did before."""
from __future__ import annotations

import math
from typing import Protocol

from cuopt.errors import CuoptError
from cuopt.optimization.result import Probe

MIN_CANDIDATES = 4  # the minimum: the baseline and this many candidates
TAU_EVALS = 16.0  # evaluations over which a kernel's remaining expected gain falls by a factor e
DEFAULT_HEADROOM = math.log(4.0)  # expected log speedup of a kernel not measured yet, or without a floor
MIN_EXTENSION_S = 5.0  # a smaller extension is not worth it


def confirm_reserve(share_s: float, eval_s: float = 0.0) -> float:
    """Seconds of a share kept for confirmation, the sanitizer and the write-back."""
    return min(max(5.0, 0.3 * share_s, 6 * eval_s), 60.0)


class Schedule(Protocol):
    min_evals: int  # evaluations a search makes before its share can stop it

    def share(self, capacity_s: float, pending: int) -> float:
        """Seconds for a kernel that starts now, with `pending` kernels (itself included) to go."""
        ...

    def enough(self, live: Probe, threshold: float) -> str:
        """Why a search past its minimum should stop before its share runs out ("" to go on), so that
        its time goes to the others; `threshold` is the speedup a confirmation needs (0.03)."""
        ...

    def extension(self, live: Probe, typical: Probe | None, waiting: int, capacity_s: float, share_s: float) -> float:
        """More seconds for a search whose share (`share_s`) ran out (0: none), given what it measured
        so far, a typical kernel of this command, the kernels still waiting to start and the
        GPU-seconds left."""
        ...

    def resume(self, stopped: dict[str, Probe], capacity_s: float, threshold: float) -> dict[str, float]:
        """Seconds for each search whose share stopped it (given what it found) to resume with, once
        every kernel has had its turn and `capacity_s` GPU-seconds are left; a name left out does not
        resume. `threshold` is the speedup a confirmation needs."""
        ...


class Equal:
    """The same share for every kernel; no minimum, no extension."""

    min_evals = 0

    def share(self, capacity_s: float, pending: int) -> float:
        return capacity_s / max(1, pending)

    def enough(self, live: Probe, threshold: float) -> str:
        return ""

    def extension(self, live: Probe, typical: Probe | None, waiting: int, capacity_s: float, share_s: float) -> float:
        return 0.0

    def resume(self, stopped: dict[str, Probe], capacity_s: float, threshold: float) -> dict[str, float]:
        return {}


class Headroom(Equal):
    """Equal shares, a minimum of `MIN_CANDIDATES` candidates, extensions by expected gain (module doc)."""

    min_evals = MIN_CANDIDATES

    def enough(self, live: Probe, threshold: float) -> str:
        if remaining_gain(live) < math.log1p(threshold):
            return (f"stopped early: less than {100 * threshold:.0f}% left to expect (roofline floor, "
                    f"{live.since_best} evaluations since the last gain); its time goes to the others")
        return ""

    def extension(self, live: Probe, typical: Probe | None, waiting: int, capacity_s: float, share_s: float) -> float:
        gain = remaining_gain(live)
        if gain <= 0 or live.eval_s <= 0:
            return 0.0
        other = typical or live
        # every kernel still waiting keeps a share as large as this one's was (its cost is unknown)
        spare = capacity_s - waiting * max(minimum_s(other), share_s)
        kernels = {"live": (gain, live.eval_s), **{f"waiting {i}": (DEFAULT_HEADROOM, other.eval_s)
                                                  for i in range(waiting)}}
        more = min(water_fill(kernels, spare)["live"], spare)
        return more if more >= _useful_s(live) else 0.0

    def resume(self, stopped: dict[str, Probe], capacity_s: float, threshold: float) -> dict[str, float]:
        # a resumed search measures its baseline again (its candidates come from the cache) and confirms;
        # while the time left cannot give every one a useful part, the dearest to restart is left out
        gains = {n: (gain, p.eval_s) for n, p in stopped.items()
                 if (gain := remaining_gain(p)) >= math.log1p(threshold) and p.eval_s > 0}
        fixed = {n: stopped[n].setup_s + confirm_reserve(0.0, stopped[n].eval_s) for n in gains}
        while gains:
            fill = water_fill(gains, capacity_s - sum(fixed[n] for n in gains))
            short = [n for n, s in fill.items() if s < _useful_s(stopped[n])]
            if not short:
                return {n: s + fixed[n] for n, s in fill.items()}
            del gains[max(short, key=lambda n: fixed[n])]
        return {}


SCHEDULES: dict[str, type] = {"headroom": Headroom, "equal": Equal}


def schedule(name: str) -> Schedule:
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


def _useful_s(p: Probe) -> float:
    """The least extra search time worth giving a search: MIN_EXTENSION_S, and two evaluations."""
    return max(MIN_EXTENSION_S, 2 * p.eval_s)


def remaining_gain(p: Probe) -> float:
    """The expected gain, discounted by the evaluations since the last improvement."""
    return expected_gain(p) * math.exp(-p.since_best / TAU_EVALS)


def minimum_s(p: Probe) -> float:
    """Seconds a kernel needs for its baseline, `MIN_CANDIDATES` candidates and a confirmation."""
    return p.setup_s + MIN_CANDIDATES * p.eval_s + confirm_reserve(0.0, p.eval_s)


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
