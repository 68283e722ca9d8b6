"""Optimize one kernel: baseline, search, confirmation, write-back, trace."""
from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from cuopt import __version__
from cuopt.capture.manifest import MANIFEST, sha256
from cuopt.evaluate.client import WorkerClient
from cuopt.evaluate.compile import CompileError
from cuopt.evaluate.evaluator import KernelEvaluator, TimingOptions, Variant
from cuopt.evaluate.shadow import Reference
from cuopt.optimization.confirm import Confirmation, confirm
from cuopt.optimization.lanes import Lender
from cuopt.optimization.environment import (GpuEnvironment, Measurements, SharedMeasurements,
                                        recorded_resources, resources, variant_key)
from cuopt.rewrite.engine import Engine
from cuopt.search.budget import Budget
from cuopt.search.mcts import MCTS, Measurement, Node, SearchOptions
from cuopt.search.policy import Policy
from cuopt.source.launches import with_launch
from cuopt.spec import expr as E
from cuopt.spec.model import Launch
from cuopt.targets import Target

SEARCH_TIMING = TimingOptions(min_runs=5, min_ms=20.0, max_s=0.5)


@dataclass
class Settings:
    policy: Policy
    search: SearchOptions
    seed: int = 0
    keep_launch: bool = False
    options: frozenset[str] = frozenset()
    threshold: float = 0.03
    rounds: int = 5
    sanitizer: bool = True
    confirm: bool = True  # False: stop after the search (self-play data collection)
    shared: SharedMeasurements | None = None  # instead of the cache: measurements shared by searches of one kernel


@dataclass
class Result:
    target: Target
    status: str  # "confirmed" (to be written), "searched", "not-faster", "no-candidate", "rejected", "error"
    message: str
    baseline: Measurement | None = None
    best: Node | None = None
    confirmation: Confirmation | None = None
    search: MCTS | None = None
    stop_reason: str = ""
    written: list[str] = field(default_factory=list)
    launch_note: str = ""
    trace: dict[str, Any] = field(default_factory=dict)  # the trace's data, written by whoever writes files
    final_source: str = ""
    final_launch: Launch | None = None
    peak_gbps: float | None = None
    reference: Reference | None = None  # what variants were judged against
    lent_gpus: list[str] = field(default_factory=list)  # why GPUs lent to the search were not used
    phases: dict[str, float] = field(default_factory=dict)  # seconds of each phase that ran: baseline, search, confirm


def context_hash(target: Target, device: dict[str, Any]) -> str:
    """What makes a cached measurement valid: the spec, the device, the timing settings, and the
    compile settings, macro sizes, the spec's `kernel` (which instantiation runs) and its capture
    (the manifest: a capture taken again is another) when there are any (so earlier caches stay
    valid without). Macro sizes are keyed with how each size set sets
    them (their definitions edited): measurements of builds that passed them as `-D` (which could fail
    to compile where the CUDA headers use the name) are not reused."""
    spec = target.spec
    parts = [__version__, device.get("name"), device.get("driver"), str(SEARCH_TIMING), repr(spec.sizes),
             repr(spec.check_sizes), repr(spec.args), repr(spec.tolerance), spec.seed]
    if target.settings.nvcc_args() or target.macro_sizes:
        parts += [target.settings.nvcc_args(), sorted(target.macro_sizes)]
    if target.macro_sizes:
        parts.append("sizes set by their definitions")
    if spec.kernel:
        parts.append(spec.kernel)
    if target.bound.captured is not None:  # validated on the captured data too: which capture, taken when
        manifest = Path(target.bound.capture_dir) / MANIFEST
        parts.append(["capture", sha256(manifest.read_bytes())])
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:16]


def optimize_kernel(target: Target, client: WorkerClient, engine: Engine, settings: Settings, budget: Budget,
                    progress: Callable[[str, MCTS | None], None], peak_gbps: float | None,
                    cache: Measurements | None = None, lender: Lender | None = None) -> Result:
    """Baseline, search and (unless `settings.confirm` is off) confirmation of one kernel on one GPU.
    Writes nothing: a confirmed variant comes back as `final_source` and `final_launch` with status
    "confirmed", and the trace as data; `cache` holds earlier measurements and records new ones;
    `lender`, when given, lends idle GPUs to measure candidates on (confirmation stays on this one)."""
    spec = target.spec
    device = client.device or {}
    ev = KernelEvaluator.for_target(target, client, arch=device.get("arch", "sm_90"), timing=SEARCH_TIMING)
    original = Variant(target.text, spec.launch)
    result = Result(target, "error", "", peak_gbps=peak_gbps)
    env = None
    clock = [time.monotonic()]

    def phase(name: str) -> None:
        now = time.monotonic()
        result.phases[f"{name}_s"] = round(now - clock[0], 2)
        clock[0] = now

    try:
        progress("baseline", None)
        try:
            base_compiled = ev.compile(original)
        except CompileError as exc:
            result.message = f"the original kernel does not compile: {exc}"
            return result
        ref = ev.set_reference(base_compiled, spec.launch, original.source)
        result.reference = ev.reference
        progress(f"baseline; {ev.reference.describe()}", None)
        if not ref.ok:
            result.message = f"the original kernel fails: {ref.status}: {ref.detail}"
            return result
        shared = settings.shared.get(variant_key(original)) if settings.shared is not None else None
        if shared is not None:
            result.baseline = shared
        else:
            base = ev.evaluate(original, base_compiled)
            if not base.ok or base.timing is None:
                result.message = f"the original kernel does not validate against itself: {base.status}: {base.detail}"
                return result
            result.baseline = Measurement("ok", base.timing.median_ms, base.timing.spread, extra=resources(base))
            if settings.shared is not None:
                settings.shared.put(variant_key(original), result.baseline)
        env = GpuEnvironment(ev, engine, spec, settings.options, settings.keep_launch,
                             settings.shared if settings.shared is not None else cache,
                             macros=target.source.macros, lender=lender)
        env.remember(original, base_compiled, result.baseline)
        phase("baseline")
        policy = settings.policy.bind(spec, target.kernel.entry, settings.options, device,
                                      lambda state: recorded_resources(_measurement(search.measured.get(env.key(state)))))
        search = MCTS(env, policy, original, result.baseline, settings.search, settings.seed)
        result.search = search
        progress("search", search)
        try:
            result.stop_reason = search.run(budget, lambda s: progress("search", s))
        except KeyboardInterrupt:
            result.stop_reason = "interrupted"
        phase("search")
        tried = [n.measurement for n in search.nodes if n is not search.root and n.measurement is not None]
        if tried and all(m.status == "compile-error" for m in tried):
            result.message = f"none of the {len(tried)} candidates compiles: {tried[0].detail}"
            return result
        if not settings.confirm:
            result.status, result.message = "searched", "searched; not confirmed, nothing written"
            return result
        candidates = [n for n in search.best(4) if n is not search.root
                      and n.measurement.ms < result.baseline.ms]  # type: ignore[operator, union-attr]
        if not candidates:
            result.status, result.message = "no-candidate", "no variant was faster than the original during the search"
            return result
        progress("confirm", search)
        result.confirmation = confirm(ev, env.compiled_for, original, candidates[:3], rounds=settings.rounds,
                                      threshold=settings.threshold, fresh_seed=spec.seed + 1 + settings.seed,
                                      use_sanitizer=settings.sanitizer, log=lambda s: progress(s, search))
        phase("confirm")
        accepted = result.confirmation.accepted
        if accepted is None:
            result.best = candidates[0]
            result.status = "not-faster"
            result.message = "no candidate was confirmed: " + "; ".join(a.verdict for a in result.confirmation.attempts)
            return result
        result.best = next(n for n in candidates if n.index == accepted.node)
        _accept(result, ev)
        return result
    finally:
        if env is not None:
            result.lent_gpus = list(env.lanes.notes)
            env.close()
        ev.close()
        result.trace = trace_data(result, device, settings, budget)


def _measurement(node: Node | None) -> Measurement | None:
    return node.measurement if node is not None else None


def _accept(result: Result, ev: KernelEvaluator) -> None:
    """The confirmed variant with its launch sites retargeted, ready to be written. A template
    kernel's variant is compiled once more as it would be written, with every instantiation the file
    makes, and rejected when one of them does not compile."""
    target, node = result.target, result.best
    assert node is not None
    variant: Variant = node.state
    source = variant.source.encode()
    old, new = target.spec.launch, variant.launch
    if new != old:
        source, result.launch_note = with_launch(source, target.kernel, target.spec, old, new, target.source.macros)
    result.final_source, result.final_launch = source.decode(), new
    if target.kernel.template:
        try:
            ev.compile(Variant(result.final_source, new))
        except CompileError as exc:
            result.status = "rejected"
            result.message = f"the confirmed variant breaks the file's template instantiations: {exc}; nothing written"
            return
    result.status, result.message = "confirmed", "confirmed"


def rejected(search: MCTS | None) -> dict[str, int]:
    if search is None:
        return {}
    return dict(Counter(n.measurement.status for n in search.nodes
                        if n.measurement is not None and not n.measurement.ok and n.duplicate_of is None))


def launch_json(launch: Launch, sizes: dict[str, int]) -> dict[str, Any]:
    env = launch.env(sizes)
    return {"block": list(launch.block), "grid": {"expr": [str(g) for g in launch.grid],
                                                   "value": [E.evaluate(g, env) for g in launch.grid]}}


def trace_data(result: Result, device: dict[str, Any], settings: Settings, budget: Budget) -> dict[str, Any]:
    search = result.search
    nodes = search.nodes if search is not None else []
    chosen = result.best or (search.best(1)[0] if search is not None and search.best(1) else None)
    steps = []
    if chosen is not None and search is not None:
        for n in chosen.path:
            m = n.measurement
            steps.append({"node": n.index, "action": n.action, "rule": n.rule, "ms": m.ms if m else None,
                          "speedup": (search.baseline_ms / m.ms) if m is not None and m.ok else None,
                          "visits": n.visits, "mean_value": round(n.mean, 4), "prior": round(n.prior, 4),
                          "launch": n.state.launch.describe(), "source": n.state.source})
    conf = result.confirmation
    return {
        "tool": f"cuopt {__version__}",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "file": str(result.target.path), "kernel": result.target.kernel.entry,
        "device": device, "policy": settings.policy.name, "policy_detail": settings.policy.describe(),
        "seed": settings.seed,
        "search_options": vars(settings.search), "budget_s": budget.seconds, "stop": result.stop_reason,
        "phases": result.phases,
        "evaluations": search.evaluations if search is not None else 0,
        "baseline": {"ms": result.baseline.ms if result.baseline else None,
                     "spread": result.baseline.spread if result.baseline else None},
        **(result.reference.json() if result.reference is not None else {}),
        "candidates": [{
            "id": n.index, "parent": n.parent.index if n.parent else None, "action": n.action, "rule": n.rule,
            "depth": n.depth, "key": n.key, "prior": round(n.prior, 4), "visits": n.visits,
            "mean_value": round(n.mean, 4), "duplicate_of": n.duplicate_of, "pruned": n.pruned,
            "status": n.measurement.status if n.measurement else "not evaluated",
            "ms": n.measurement.ms if n.measurement else None,
            "spread": n.measurement.spread if n.measurement else None,
            "detail": n.measurement.detail if n.measurement else "",
            "extra": n.measurement.extra if n.measurement else {},
        } for n in nodes if n.measurement is not None],
        "chosen": {"node": chosen.index if chosen else None, "steps": steps},
        **({"lent_gpus": result.lent_gpus} if result.lent_gpus else {}),
        "confirmation": None if conf is None else {
            "sanitizer": conf.sanitizer,
            "attempts": [{"node": a.node, "sequence": a.sequence, "verdict": a.verdict,
                          "baseline_ms": a.baseline.median_ms if a.baseline else None,
                          "baseline_spread": a.baseline.spread if a.baseline else None,
                          "candidate_ms": a.candidate.median_ms if a.candidate else None,
                          "candidate_spread": a.candidate.spread if a.candidate else None,
                          "speedup": a.speedup} for a in conf.attempts]},
        "result": {"status": result.status, "message": result.message, "written": result.written,
                   "launch_note": result.launch_note},  # completed by whoever writes the files
    }


def peak_fraction(target: Target, ms: float | None, peak_gbps: float | None) -> float | None:
    if ms is None or not peak_gbps:
        return None
    inst = target.bound.instances()[0]
    return inst.bytes_moved() / (ms * 1e-3) / 1e9 / peak_gbps

