"""`cuopt bench`: validate and time kernels as their specs launch them."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from cuopt.commands import compile_options
from cuopt.errors import CuoptError

_BOUND = {"memory": "mem", "compute": "fp32"}  # what sets the floor, as the table shows it


def command(
    paths: Annotated[list[Path], typer.Argument(help="A .cu file or a directory of them (kernels with a spec).")],
    kernel: Annotated[Optional[str], typer.Option("--kernel", "-k", help="Only this kernel.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="No GPU: check specs, evaluate launches, compile, "
                                          "print resources.")] = False,
    arch: Annotated[Optional[str], typer.Option(help="Target architecture (default: the GPU's, or sm_90).")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds one launch may take before it counts as hung.")] = 10.0,
    rewrites: Annotated[bool, typer.Option("--rewrites", help="Also validate and time every single rewrite and "
                                           "report the best speedup per rule.")] = False,
    include: compile_options.Include = None,
    define: compile_options.Define = None,
    nvcc_flag: compile_options.NvccFlag = None,
) -> None:
    """Validate each kernel against itself (two runs), time it, and report GB/s, % of peak bandwidth and
    the roofline floor. With --rewrites, also every single rewrite of each kernel, against the original."""
    from cuopt import ui
    from cuopt.evaluate.build import compile_all, plan_for
    from cuopt.evaluate.compile import DEFAULT_ARCH
    from cuopt.targets import collect

    warnings: list[str] = []
    targets = collect(paths, kernel, warnings, compile_options.settings(include, define, nvcc_flag))
    for w in warnings:
        ui.warn(w)
    client = None
    if not dry_run:
        from cuopt.evaluate.device import open_gpu

        client = open_gpu(timeout)
    try:
        target_arch = arch or (client.device["arch"] if client else DEFAULT_ARCH)
        compiled = compile_all([(plan_for(t), t.text) for t in targets], target_arch)
        rows = [_row(t, c, client, target_arch) for t, c in zip(targets, compiled)]
        bandwidth = fp32 = None
        if client is not None:
            from cuopt.evaluate.device import peak_bandwidth, peak_fp32_gflops

            bandwidth = peak_bandwidth(client)
            fp32 = peak_fp32_gflops(client.device or {})
            if fp32 is None and any("flops" in r for r in rows):
                ui.warn(f"no FP32 peak for this GPU ({_describe(client.device or {})}); "
                        "roofline floors count bytes only")
            for r in rows:
                if r.get("gbps") is not None:
                    r["peak_pct"] = _figures(100 * r["gbps"] / bandwidth)
                    _add_floor(r, bandwidth, fp32)
            if rewrites:
                from cuopt.evaluate.sweep import sweep
                from cuopt.rewrite.engine import Engine

                engine = Engine.default()
                for t, r in zip(targets, rows):
                    if r["status"] == "ok":
                        r["rewrites"] = sweep(t, client, engine, target_arch)["rewrites"]
    finally:
        if client is not None:
            client.close()
    if json_out:
        ui.print_json(rows)
    else:
        _table(rows, client is not None, bandwidth, fp32)
        if rewrites and client is not None:
            _rewrite_table(rows)
    if any(r["status"] not in ("ok", "compiled") for r in rows):
        raise typer.Exit(1)


def _row(target: Any, compiled: Any, client: Any, arch: str) -> dict[str, Any]:
    from cuopt.evaluate.accuracy import worst
    from cuopt.evaluate.compile import CompileError
    from cuopt.evaluate.evaluator import KernelEvaluator, launch_dims

    spec = target.spec
    inst = target.bound.instances()[0]
    dims = launch_dims(spec.launch, inst)
    row: dict[str, Any] = {
        "file": str(target.path), "kernel": target.kernel.entry, "sizes": inst.sizes,
        "block": list(dims.block[:len(spec.launch.block)]), "grid": list(dims.grid[:len(spec.launch.grid)]),
        "shared": dims.shared, "bytes": inst.bytes_moved(),
    }
    if spec.flops is not None:
        from cuopt.spec import expr as E

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
    from dataclasses import replace

    from cuopt.evaluate.build import plan_for
    from cuopt.evaluate.shadow import compile_shadow

    plan = plan_for(target)
    twin, reason = compile_shadow(target.text, target.bound, lambda s, k: replace(plan, kernel=k).compile(s, arch),
                                  macros=target.source.macros)
    return {"reference": "float64"} if twin is not None else {"reference": "original", "reference_reason": reason}


def _add_floor(row: dict[str, Any], bandwidth: float, fp32: float | None) -> None:
    """The roofline floor of a timed row, and the fraction of it the measured time reaches."""
    from cuopt.evaluate.device import roofline_floor_ms

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


def _table(rows: list[dict[str, Any]], timed: bool, bandwidth: float | None, fp32: float | None) -> None:
    from rich.table import Table

    from cuopt import ui

    if bandwidth:
        title = f"cuopt bench (peak copy bandwidth {bandwidth:.0f} GB/s" + \
            (f", peak FP32 {fp32 / 1e3:.3g} TFLOP/s)" if fp32 else ")")
    else:
        title = "cuopt bench (dry run)"
    table = Table(title=title)
    for col in ["kernel", "status", "launch"] + (["check", "time", "±", "GB/s", "% peak", "GFLOP/s", "floor",
                                                  "% floor"] if timed else []) + ["regs", "smem", "spills"]:
        table.add_column(col, justify="right" if col not in ("kernel", "status", "launch", "check") else "left")
    for r in rows:
        launch = f"{'x'.join(map(str, r['block']))} × {'x'.join(map(str, r['grid']))}"
        cells = [f"{Path(r['file']).name}:{r['kernel']}", r["status"], launch]
        if timed:
            cells += [r.get("check", "-"), ui.fmt_ms(r.get("ms")),
                      f"{r['spread'] * 100:.1f}%" if "spread" in r else "-",
                      str(r.get("gbps", "-")), str(r.get("peak_pct", "-")), str(r.get("gflops", "-")),
                      f"{ui.fmt_ms(r['floor_ms'])} {_BOUND[r['floor_bound']]}" if "floor_ms" in r else "-",
                      f"{100 * r['of_floor']:.1f}" if "of_floor" in r else "-"]
        cells += [str(r.get("registers", "-")), str(r.get("shared_static", "-")),
                  str(r.get("spill_stores", 0) + r.get("spill_loads", 0)) if "spill_stores" in r else "-"]
        table.add_row(*cells)
    out = ui.console()
    out.print(table)
    for r in rows:
        if "error" in r:
            out.print(f"{Path(r['file']).name}:{r['kernel']}: {r['status']}: {r['error']}", markup=False)
    for r in rows:
        if r.get("reference") == "original":
            out.print(f"{Path(r['file']).name}:{r['kernel']}: reference: the original kernel "
                      f"({r['reference_reason']})", markup=False)


def _rewrite_table(rows: list[dict[str, Any]]) -> None:
    """Best validated speedup of each rule's single rewrites, per kernel."""
    from rich.table import Table

    from cuopt import ui

    rules = sorted({x["rule"] for r in rows for x in r.get("rewrites", [])})
    table = Table(title="best single rewrite per rule (speedup over the original; - : none applies; "
                        "x : none validates)")
    table.add_column("kernel")
    for rule in rules:
        table.add_column(rule, justify="right")
    for r in rows:
        cells = []
        for rule in rules:
            mine = [x for x in r.get("rewrites", []) if x["rule"] == rule]
            good = [x["speedup"] for x in mine if x["status"] == "ok" and x["speedup"]]
            cells.append(f"{max(good):.2f}" if good else ("x" if mine else "-"))
        table.add_row(f"{Path(r['file']).name}:{r['kernel']}", *cells)
    ui.console().print(table)
    for r in rows:
        for x in r.get("rewrites", []):
            if x["status"] != "ok":
                ui.console().print(f"{Path(r['file']).name}:{r['kernel']} {x['id']}: {x['status']}: {x['detail']}",
                                   markup=False)
