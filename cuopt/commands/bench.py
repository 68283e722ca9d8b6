"""`cuopt bench`: validate and time kernels as their specs launch them."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from cuopt.commands import compile_options

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
    # deferred: loaded when the command runs, not at `cuopt --help`
    from cuopt import ui
    from cuopt.benchmark import measure
    from cuopt.targets import collect

    warnings: list[str] = []
    targets = collect(paths, kernel, warnings, compile_options.settings(include, define, nvcc_flag))
    for w in warnings:
        ui.warn(w)
    done = measure(targets, dry_run=dry_run, arch=arch, timeout=timeout, rewrites=rewrites, warn=ui.warn)
    if json_out:
        ui.print_json(done.rows)
    else:
        _table(done.rows, not dry_run, done.bandwidth, done.fp32)
        if rewrites and not dry_run:
            _rewrite_table(done.rows)
    if any(r["status"] not in ("ok", "compiled") for r in done.rows):
        raise typer.Exit(1)


def _table(rows: list[dict[str, Any]], timed: bool, bandwidth: float | None, fp32: float | None) -> None:
    # deferred: loaded when the command runs, not at `cuopt --help`
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
    # deferred: loaded when the command runs, not at `cuopt --help`
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
