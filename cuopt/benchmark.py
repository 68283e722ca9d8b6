"""Validate and time kernels as their specs launch them (`cuopt bench`, `cuopt.bench`): GB/s, % of
peak bandwidth, the roofline floor and, on request, every single rewrite against the original."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from cuopt.errors import CuoptError
from cuopt.evaluate.accuracy import worst
from cuopt.evaluate.build import compile_all, plan_for
from cuopt.evaluate.compile import DEFAULT_ARCH, CompileError
from cuopt.evaluate.device import open_gpu, peak_bandwidth, peak_fp32_gflops, roofline_floor_ms
from cuopt.evaluate.evaluator import KernelEvaluator, launch_dims
from cuopt.evaluate.shadow import compile_shadow
from cuopt.evaluate.sweep import sweep
from cuopt.rewrite.engine import Engine
from cuopt.spec import expr as E


@dataclass(frozen=True)
class Bench:
    rows: list[dict[str, Any]]  # one per kernel: the JSON rows of `cuopt bench --json`
    bandwidth: float | None = None  # measured copy bandwidth, GB/s (None on a dry run)
    fp32: float | None = None  # FP32 peak, GFLOP/s, when known


def measure(targets: list[Any], *, dry_run: bool = False, arch: str | None = None, timeout: float = 10.0,
            rewrites: bool = False, warn: Callable[[str], None] = lambda s: None) -> Bench:
    """Each target compiled, validated against itself (two runs) and timed; on a dry run, compiled only."""
    client = None
    if not dry_run:
        client = open_gpu(timeout)
    try:
        target_arch = arch or (client.device["arch"] if client else DEFAULT_ARCH)
        compiled = compile_all([(plan_for(t), t.text) for t in targets], target_arch)
        rows = [_row(t, c, client, target_arch) for t, c in zip(targets, compiled)]
        if client is None:
            return Bench(rows)
        bandwidth = peak_bandwidth(client)
        fp32 = peak_fp32_gflops(client.device or {})
        if fp32 is None and any("flops" in r for r in rows):
            warn(f"no FP32 peak for this GPU ({_describe(client.device or {})}); roofline floors count bytes only")
        for r in rows:
            if r.get("gbps") is not None:
                r["peak_pct"] = _figures(100 * r["gbps"] / bandwidth)
                _add_floor(r, bandwidth, fp32)
        if rewrites:
            engine = Engine.default()
            for t, r in zip(targets, rows):
                if r["status"] == "ok":
                    r["rewrites"] = sweep(t, client, engine, target_arch)["rewrites"]
        return Bench(rows, bandwidth, fp32)
    finally:
        if client is not None:
            client.close()


def _row(target: Any, compiled: Any, client: Any, arch: str) -> dict[str, Any]:
    spec = target.spec
    inst = target.bound.instances()[0]
    dims = launch_dims(spec.launch, inst)
    row: dict[str, Any] = {
        "file": str(target.path), "kernel": target.kernel.entry, "sizes": inst.sizes,
        "block": list(dims.block[:len(spec.launch.block)]), "grid": list(dims.grid[:len(spec.launch.grid)]),
        "shared": dims.shared, "bytes": inst.bytes_moved(),
    }
    if spec.capture:  # timed, and validated first, on the program's own data
        row["capture"] = spec.capture
    if spec.flops is not None:
        row["flops"] = E.evaluate(spec.flops, inst.sizes)
    if isinstance(compiled, CompileError):
        return {**row, "status": "compile-error", "error": str(compiled)}
    r = compiled.resources
    row.update(registers=r.registers, shared_static=r.shared_bytes, spill_stores=r.spill_stores,
               spill_loads=r.spill_loads, stack=r.stack_bytes, arch=arch)
    if client is None:
        return {**row, "status": "compiled", **_dry_reference(target, arch)}
    ev = KernelEvaluator.for_target(target, client, arch=arch)
    try:
        ref = ev.set_reference(compiled, spec.launch, target.text)
        row.update(ev.reference.json())
        if not ref.ok:
            return {**row, "status": ref.status, "error": ref.detail}
        check = ev.validate(compiled, spec.launch)
        if not check.ok:
            return {**row, "status": "nondeterministic" if check.status == "wrong-answer" else check.status,
                    "error": check.detail}
        vs64 = worst([c.accuracy for c in check.comparisons if c.accuracy is not None])
        if vs64 is not None:
            row["error_vs_float64"] = vs64
            row["check"] = f"vs float64: norm-wise {vs64['norm']:.2g} (first run {vs64['original_norm']:.2g})"
        else:
            largest = max((c.max_abs for c in check.comparisons), default=0.0)
            row["check"] = "identical" if largest == 0 else f"within tolerance (max abs err {largest:.2g})"
        timed = ev.time([(compiled, spec.launch)])
        if not isinstance(timed, list):
            return {**row, "status": timed.status, "error": timed.detail}
        t = timed[0]
        row.update(status="ok", ms=t.median_ms, spread=t.spread, runs=t.runs,
                   gbps=_figures(inst.bytes_moved() / (t.median_ms * 1e-3) / 1e9))
        if "flops" in row:
            row["gflops"] = _figures(row["flops"] / (t.median_ms * 1e-3) / 1e9)
        return row
    except CuoptError as exc:
        return {**row, "status": "error", "error": str(exc)}
    finally:
        ev.close()


def _dry_reference(target: Any, arch: str) -> dict[str, Any]:
    """Without a GPU: whether the kernel would be judged against its float64 shadow (promoted and
    compiled here), or against the original, and why."""
    plan = plan_for(target)
    twin, reason = compile_shadow(target.text, target.bound, lambda s, k: replace(plan, kernel=k).compile(s, arch),
                                  macros=target.source.macros)
    return {"reference": "float64"} if twin is not None else {"reference": "original", "reference_reason": reason}


def _add_floor(row: dict[str, Any], bandwidth: float, fp32: float | None) -> None:
    """The roofline floor of a timed row, and the fraction of it the measured time reaches."""
    floor = roofline_floor_ms(row["bytes"], row.get("flops"), bandwidth, fp32)
    if floor is not None and row["ms"] > 0:
        row.update(floor_ms=floor[0], floor_bound=floor[1], of_floor=floor[0] / row["ms"])


def _figures(x: float) -> float:
    """`x` to four significant figures: one decimal for large rates, and a small one (a kernel that
    moves little data for its time) not rounded to zero."""
    return float(f"{x:.4g}")


def _describe(device: dict[str, Any]) -> str:
    return (f"{device.get('name', '?')}, {device.get('arch', '?')}, {device.get('sms') or '?'} SMs, "
            f"clock {device.get('clock_khz') or '?'} kHz")
