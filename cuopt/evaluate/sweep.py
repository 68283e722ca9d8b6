"""Every single rewrite of a kernel, validated (and timed) against the original."""
from __future__ import annotations

from typing import Any

from cuopt.evaluate.client import WorkerClient
from cuopt.evaluate.build import compile_all
from cuopt.evaluate.evaluator import KernelEvaluator, TimingOptions, Variant
from cuopt.rewrite.context import Context
from cuopt.rewrite.engine import Engine
from cuopt.targets import Target

SWEEP_TIMING = TimingOptions(min_runs=10, min_ms=50.0, max_s=1.0)


def sweep(target: Target, client: WorkerClient, engine: Engine, arch: str, *, timed: bool = True,
          options: frozenset[str] = frozenset()) -> dict[str, Any]:
    """{kernel, baseline_ms, rewrites: [{id, rule, status, detail, ms, speedup}]}."""
    spec = target.spec
    ev = KernelEvaluator.for_target(target, client, arch=arch, timing=SWEEP_TIMING)
    try:
        original = Variant(target.text, spec.launch)
        base = ev.compile(original)
        ref = ev.set_reference(base, spec.launch)
        if not ref.ok:
            return {"kernel": target.kernel.entry, "file": str(target.path), "error": ref.detail, "rewrites": []}
        base_ms = None
        if timed:
            t = ev.time([(base, spec.launch)])
            base_ms = t[0].median_ms if isinstance(t, list) else None
        ctx = Context(target.source.source, spec.launch, target.kernel.entry, spec, options, target.source.macros,
                      target.settings)
        offers = engine.offers(ctx)
        variants = [Variant(o.result.source.decode(), o.result.launch) for o in offers]
        compiled = compile_all([(ev.plan, v.source) for v in variants], arch)
        rows = []
        for offer, variant, c in zip(offers, variants, compiled):
            out = ev.evaluate(variant, c, timed=timed)
            ms = out.timing.median_ms if out.timing else None
            rows.append({"id": offer.action.id, "rule": offer.action.rule, "status": out.status,
                         "detail": out.detail, "ms": ms,
                         "speedup": base_ms / ms if base_ms and ms else None})
        return {"kernel": target.kernel.entry, "file": str(target.path), "baseline_ms": base_ms, "rewrites": rows}
    finally:
        ev.close()
