"""What `cuopt optimize` tells the user: the JSON object of a kernel's search (made where it ran),
the terminal summary and the Markdown report (made by the driver, from a `KernelResult`)."""
from __future__ import annotations

import difflib
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

from cuopt.optimization.result import KernelResult
from cuopt.optimization.session import Result, launch_json, peak_fraction, rejected
from cuopt.ui import fmt_ms


def _final(result: Result) -> tuple[float | None, list[str]]:
    """Time and rewrite sequence of the variant the report is about (confirmed, else best seen)."""
    accepted = result.confirmation.accepted if result.confirmation else None
    node = result.best
    if accepted is not None and accepted.candidate is not None:
        return accepted.candidate.median_ms, accepted.sequence
    if node is not None and node.measurement is not None:
        return node.measurement.ms, node.sequence
    return None, []


def summary(result: Result) -> dict[str, Any]:
    """The JSON object of one kernel."""
    t = result.target
    accepted = result.confirmation.accepted if result.confirmation else None
    best_ms, sequence = _final(result)
    base_ms = accepted.baseline.median_ms if accepted and accepted.baseline else (
        result.baseline.ms if result.baseline else None)
    launch = result.final_launch if result.status == "confirmed" and result.final_launch else t.spec.launch
    return {
        "file": str(t.path), "kernel": t.kernel.entry, "status": result.status, "message": result.message,
        "baseline_ms": base_ms, "best_ms": best_ms,
        "speedup": (base_ms / best_ms) if base_ms and best_ms else None,
        "spread": max(accepted.baseline.spread, accepted.candidate.spread) if accepted and accepted.baseline
        and accepted.candidate else None,
        "peak_pct": _pct(peak_fraction(t, best_ms, result.peak_gbps)),
        "baseline_peak_pct": _pct(peak_fraction(t, base_ms, result.peak_gbps)),
        "evaluations": result.search.evaluations if result.search else 0,
        "rejected": rejected(result.search), "sequence": sequence,
        "launch": launch_json(launch, t.spec.sizes), "launch_note": result.launch_note,
        "stop": result.stop_reason, "trace": None, "report": None, "written": result.written,
        **(result.reference.json() if result.reference is not None else {}),
        "error_vs_float64": _accuracy(result),
    }


def _accuracy(result: Result) -> dict[str, float] | None:
    """The reported variant's and the original's largest errors against the float64 reference."""
    m = result.best.measurement if result.best is not None else None
    return m.extra.get("error_vs_float64") if m is not None else None


def accuracy_line(result: Result) -> str:
    """The reference and, with a float64 one, both errors against it."""
    if result.reference is None:
        return ""
    line = result.reference.describe()
    vs64 = _accuracy(result)
    if vs64 is not None:
        line += (f"; best vs float64: max rel err {vs64['max_rel']:.3g}, norm-wise {vs64['norm']:.3g} "
                 f"(original: {vs64['original_max_rel']:.3g}, {vs64['original_norm']:.3g})")
    return line


def _pct(fraction: float | None) -> float | None:
    return None if fraction is None else round(100 * fraction, 1)


def diff_text(name: str, before: str, after: str) -> str:
    """The unified diff of a file from what it was to what was written ("" when nothing was)."""
    if not after:
        return ""
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        f"a/{name}", f"b/{name}"))


def render(console: Console, r: KernelResult, show_diff: bool = True) -> None:
    title = f"{Path(r.file).name}:{r.kernel}"
    table = Table(title=title, show_header=False)
    table.add_column(justify="right")
    table.add_column()
    table.add_row("result", f"{r.status}: {r.message}")
    if r.baseline_ms is not None:
        table.add_row("baseline", f"{fmt_ms(r.baseline_ms)}" + (f" ({r.baseline_peak_pct}% of peak bandwidth)"
                                                                if r.baseline_peak_pct is not None else ""))
    if r.best_ms is not None and r.speedup is not None:
        spread = f" ±{100 * r.spread:.1f}%" if r.spread is not None else ""
        table.add_row("best", f"{fmt_ms(r.best_ms)} ({r.speedup:.2f}x{spread}"
                      + (f", {r.peak_pct}% of peak bandwidth" if r.peak_pct is not None else "") + ")")
    if r.accuracy_line:
        table.add_row("accuracy", r.accuracy_line)
    table.add_row("sequence", " → ".join(r.sequence) or "-")
    table.add_row("evaluations", f"{r.evaluations} ({r.stop})" if r.stop else str(r.evaluations))
    if r.rejected:
        table.add_row("rejected", ", ".join(f"{k}: {v}" for k, v in sorted(r.rejected.items())))
    if r.confirmation:
        table.add_row("confirmation", "; ".join(r.confirmation) + f" (sanitizer: {r.sanitizer})")
    if r.budget:
        table.add_row("budget", budget_line(r.budget) + (f" on GPU {r.gpu}" if r.gpu else ""))
    if r.written:
        table.add_row("written", ", ".join(r.written))
    if r.trace:
        table.add_row("trace", r.trace)
    if r.report:
        table.add_row("report", r.report)
    console.print(table)
    if r.launch_note:
        style = "bold yellow" if r.launch_note.startswith("LAUNCH CHANGED") else ""
        console.print(r.launch_note, style=style, markup=False)
    if show_diff and r.diff:
        console.print(Syntax(r.diff, "diff", theme="ansi_dark", background_color="default"))


def budget_line(budget: dict[str, Any]) -> str:
    """A kernel's share of the budget in words."""
    line = f"{budget.get('used_s', 0):.0f} s used of a {budget.get('share_s', 0):.0f} s share"
    if budget.get("minimum_s"):
        line += f" (minimum {budget['minimum_s']:.0f} s)"
    if budget.get("phases"):
        line += ": " + ", ".join(f"{name.removesuffix('_s')} {s:.1f} s" for name, s in budget["phases"].items())
    if budget.get("resumed_s"):
        line += f"; resumed for {budget['resumed_s']:.0f} s" + (f", {budget['resume']}" if budget.get("resume") else "")
    return line + (f"; {budget['note']}" if budget.get("note") else "")


def write_markdown(r: KernelResult, table: str) -> Path:
    """The Markdown report under `.cuopt/reports/` next to the file."""
    cu = Path(r.file)
    directory = cu.parent / ".cuopt" / "reports"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{cu.stem}.{table}.{time.strftime('%Y%m%d-%H%M%S')}.md"
    lines = [f"# cuopt optimize: {cu.name} / {r.kernel}", "",
             f"- result: **{r.status}**: {r.message}",
             f"- baseline: {fmt_ms(r.baseline_ms)}", f"- best: {fmt_ms(r.best_ms)}"
             + (f" ({r.speedup:.2f}x)" if r.speedup else ""),
             f"- % of peak bandwidth: {r.baseline_peak_pct} → {r.peak_pct}",
             f"- sequence: {' → '.join(f'`{x}`' for x in r.sequence) or '-'}",
             f"- evaluations: {r.evaluations}; rejected: "
             + (", ".join(f"{k} {v}" for k, v in sorted(r.rejected.items())) or "none")]
    if r.launch:
        lines.append(f"- launch: block {r.launch['block']}, grid {r.launch['grid']['expr']}")
    if r.budget:
        lines.append(f"- budget: {budget_line(r.budget)}")
    if r.accuracy_line:
        lines.append(f"- accuracy: {r.accuracy_line}")
    if r.launch_note:
        lines.append(f"- **{r.launch_note}**")
    if r.confirmation:
        lines.append(f"- confirmation (sanitizer: {r.sanitizer}):")
        lines += [f"  - {c}" for c in r.confirmation]
    lines.append(f"- trace: `{r.trace}`")
    if r.diff:
        lines += ["", "## Diff", "", "```diff", r.diff.rstrip("\n"), "```"]
    path.write_text("\n".join(lines) + "\n")
    return path
