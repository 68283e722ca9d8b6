"""What `cuopt optimize` tells the user: the terminal summary, a Markdown report, a JSON object."""
from __future__ import annotations

import difflib
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

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
    launch = result.final_launch if result.status in ("written", "dry-run") and result.final_launch else t.spec.launch
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
        "stop": result.stop_reason, "trace": str(result.trace) if result.trace else None,
        "report": str(result.report) if result.report else None, "written": result.written,
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


def diff_text(result: Result) -> str:
    if not result.final_source:
        return ""
    before = result.target.text.splitlines(keepends=True)
    after = result.final_source.splitlines(keepends=True)
    name = result.target.path.name
    return "".join(difflib.unified_diff(before, after, f"a/{name}", f"b/{name}"))


def render(console: Console, result: Result, show_diff: bool = True) -> None:
    s = summary(result)
    title = f"{result.target.path.name}:{result.target.kernel.entry}"
    table = Table(title=title, show_header=False)
    table.add_column(justify="right")
    table.add_column()
    table.add_row("result", f"{result.status}: {result.message}")
    if s["baseline_ms"] is not None:
        table.add_row("baseline", f"{fmt_ms(s['baseline_ms'])}" + (f" ({s['baseline_peak_pct']}% of peak bandwidth)"
                                                                   if s["baseline_peak_pct"] is not None else ""))
    if s["best_ms"] is not None:
        spread = f" ±{100 * s['spread']:.1f}%" if s["spread"] is not None else ""
        table.add_row("best", f"{fmt_ms(s['best_ms'])} ({s['speedup']:.2f}x{spread}"
                      + (f", {s['peak_pct']}% of peak bandwidth" if s["peak_pct"] is not None else "") + ")")
    if result.reference is not None:
        table.add_row("accuracy", accuracy_line(result))
    table.add_row("sequence", " → ".join(s["sequence"]) or "-")
    table.add_row("evaluations", f"{s['evaluations']} ({result.stop_reason})" if result.stop_reason else str(s["evaluations"]))
    if s["rejected"]:
        table.add_row("rejected", ", ".join(f"{k}: {v}" for k, v in sorted(s["rejected"].items())))
    if result.confirmation is not None:
        table.add_row("confirmation", "; ".join(a.verdict for a in result.confirmation.attempts)
                      + f" (sanitizer: {result.confirmation.sanitizer})")
    if s["written"]:
        table.add_row("written", ", ".join(s["written"]))
    table.add_row("trace", str(s["trace"]))
    if s["report"]:
        table.add_row("report", str(s["report"]))
    console.print(table)
    if result.launch_note:
        style = "bold yellow" if result.launch_note.startswith("LAUNCH CHANGED") else ""
        console.print(result.launch_note, style=style, markup=False)
    if show_diff and result.final_source:
        console.print(Syntax(diff_text(result), "diff", theme="ansi_dark", background_color="default"))


def write_markdown(result: Result) -> Path:
    s = summary(result)
    directory = result.target.path.parent / ".cuopt" / "reports"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{result.target.path.stem}.{result.target.spec.name}.{time.strftime('%Y%m%d-%H%M%S')}.md"
    lines = [f"# cuopt optimize: {result.target.path.name} / {result.target.kernel.entry}", "",
             f"- result: **{result.status}**: {result.message}",
             f"- baseline: {fmt_ms(s['baseline_ms'])}", f"- best: {fmt_ms(s['best_ms'])}"
             + (f" ({s['speedup']:.2f}x)" if s["speedup"] else ""),
             f"- % of peak bandwidth: {s['baseline_peak_pct']} → {s['peak_pct']}",
             f"- sequence: {' → '.join(f'`{x}`' for x in s['sequence']) or '-'}",
             f"- evaluations: {s['evaluations']}; rejected: "
             + (", ".join(f"{k} {v}" for k, v in sorted(s["rejected"].items())) or "none"),
             f"- launch: block {s['launch']['block']}, grid {s['launch']['grid']['expr']}"]
    if result.reference is not None:
        lines.append(f"- accuracy: {accuracy_line(result)}")
    if result.launch_note:
        lines.append(f"- **{result.launch_note}**")
    if result.confirmation is not None:
        lines.append(f"- confirmation (sanitizer: {result.confirmation.sanitizer}):")
        lines += [f"  - {' + '.join(a.sequence) or '-'}: {a.verdict}" for a in result.confirmation.attempts]
    lines.append(f"- trace: `{s['trace']}`")
    diff = diff_text(result)
    if diff:
        lines += ["", "## Diff", "", "```diff", diff.rstrip("\n"), "```"]
    path.write_text("\n".join(lines) + "\n")
    result.report = path
    return path
