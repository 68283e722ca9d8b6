"""Confirmation before write-back: re-validate on fresh inputs, run compute-sanitizer, and re-time
baseline and candidate interleaved (A/B/A/B); accept only a clear, validated speedup."""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from cuopt.evaluate.client import KernelRef
from cuopt.evaluate.evaluator import KernelEvaluator, TimingOptions, Variant, launch_dims
from cuopt.evaluate.sanitize import SanitizerReport, find_sanitizer, sanitize
from cuopt.evaluate.stats import Timing

CONFIRM_TIMING = TimingOptions(min_runs=10, min_ms=50.0, max_s=1.0)


@dataclass
class Attempt:
    node: int
    sequence: list[str]
    verdict: str  # "accepted" or why not
    baseline: Timing | None = None
    candidate: Timing | None = None

    @property
    def speedup(self) -> float | None:
        if self.baseline is None or self.candidate is None:
            return None
        return self.baseline.median_ms / self.candidate.median_ms


@dataclass
class Confirmation:
    attempts: list[Attempt] = field(default_factory=list)
    sanitizer: str = ""

    @property
    def accepted(self) -> Attempt | None:
        return next((a for a in self.attempts if a.verdict == "accepted"), None)


def confirm(ev: KernelEvaluator, compiled_for: Callable[[Variant], Any], baseline: Variant,
            candidates: list[Any], *, rounds: int = 5, threshold: float = 0.03, fresh_seed: int,
            use_sanitizer: bool = True, log: Callable[[str], None] = lambda s: None) -> Confirmation:
    """Try candidates (search nodes, fastest first) until one is confirmed. compute-sanitizer runs
    in its own processes while the GPU worker builds the fresh references and validates the
    candidate (a tool that cannot conclude then runs again alone); the interleaved timing waits
    until it has finished, so nothing else runs then."""
    result = Confirmation()
    tool = find_sanitizer() if use_sanitizer else None
    result.sanitizer = "compute-sanitizer" if tool else ("disabled" if not use_sanitizer else "not installed")
    base_compiled = compiled_for(baseline)
    fresh = ev.sibling(timing=CONFIRM_TIMING, seed=fresh_seed)
    timer = ev.sibling(timing=CONFIRM_TIMING)
    background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cuopt-sanitizer")

    def sanitizing(node: Any) -> Callable[[], list[SanitizerReport]]:
        """compute-sanitizer on the candidate at the smallest size, started now; the returned call
        waits for its reports. A tool that could not conclude while the worker ran runs again alone."""
        if tool is None:
            return list
        index = min(range(len(fresh.instances)), key=lambda i: fresh.instances[i].bytes_moved())
        smallest, build = fresh.instances[index], compiled_for(node.state).at(index)
        dims = launch_dims(node.state.launch, smallest)
        args = (KernelRef(str(build.cubin), build.symbol, dims.shared), smallest, dims)
        running: Future[list[SanitizerReport]] = background.submit(sanitize, *args)

        def reports() -> list[SanitizerReport]:
            first = running.result()
            again = tuple(r.tool for r in first if not r.conclusive)
            retried = {r.tool: r for r in sanitize(*args, tools=again)} if again else {}
            return [retried.get(r.tool, r) for r in first]
        return reports

    try:
        reports = sanitizing(candidates[0]) if candidates else list
        ref = fresh.set_reference(base_compiled, baseline.launch, baseline.source)
        timer_ref = timer.set_reference(base_compiled, baseline.launch)
        if not ref.ok or not timer_ref.ok:
            result.attempts.append(Attempt(-1, [], f"the original kernel failed again: {ref.detail or timer_ref.detail}"))
            return result
        for i, node in enumerate(candidates):
            attempt = Attempt(node.index, node.sequence, "")
            result.attempts.append(attempt)
            compiled = compiled_for(node.state)
            log(f"confirming {' + '.join(node.sequence)}")
            if i:
                reports = sanitizing(node)
            check = fresh.validate(compiled, node.state.launch)
            if not check.ok:
                attempt.verdict = f"rejected: fails on fresh inputs ({check.status}: {check.detail})"
                continue
            found = reports()  # this run, and every earlier one (one at a time), ends before anything is timed
            bad = [r for r in found if not r.clean]
            if bad:
                attempt.verdict = f"rejected: {bad[0].tool} reported {bad[0].detail}"
                continue
            skipped = [r for r in found if not r.conclusive]
            if skipped:
                result.sanitizer = f"compute-sanitizer inconclusive ({skipped[0].tool}: {skipped[0].detail})"
            timed = timer.time([(base_compiled, baseline.launch), (compiled, node.state.launch)], rounds=rounds)
            if not isinstance(timed, list):
                attempt.verdict = f"rejected: timing failed ({timed.status}: {timed.detail})"
                continue
            attempt.baseline, attempt.candidate = timed
            needed = max(threshold, attempt.baseline.spread, attempt.candidate.spread)
            speedup = attempt.speedup or 0.0
            if speedup > 1 + needed:
                attempt.verdict = "accepted"
                return result
            attempt.verdict = (f"rejected: {speedup:.3f}x is within the measured spread "
                               f"(needs more than {1 + needed:.3f}x)")
        return result
    finally:
        background.shutdown(wait=True)
        fresh.close()
        timer.close()
