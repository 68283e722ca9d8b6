"""`cuopt explain`: how `cuopt optimize` got its result, from the trace."""
from __future__ import annotations

import difflib
from collections import defaultdict
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from cuopt.optimization.trace import latest_traces, load_trace


def command(
    path: Annotated[Path, typer.Argument(help="A .cu file (its newest traces) or a trace .json file.")],
    kernel: Annotated[Optional[str], typer.Option("--kernel", "-k", help="Only this kernel.")] = None,
    diff: Annotated[bool, typer.Option("--diff", help="Show each step's diff.")] = False,
    all_candidates: Annotated[bool, typer.Option("--all", help="List every candidate.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show the chosen rewrite sequence step by step (time after each step and why the rule helps),
    the rejected candidates grouped by reason, and the confirmation."""
    # deferred: loaded when the command runs, not at `cuopt --help`
    from cuopt import ui

    paths = [path] if path.suffix == ".json" else latest_traces(path, kernel)
    traces = [load_trace(p) for p in paths]
    if json_out:
        objs = [_as_json(t, p, diff) for t, p in zip(traces, paths)]
        ui.print_json(objs[0] if len(objs) == 1 else objs)
        return
    console = ui.console()
    for t, p in zip(traces, paths):
        _render(console, t, p, diff, all_candidates)


def _why(rule: str | None) -> str:
    if rule is None:
        return ""
    # deferred: loaded when the command runs, not at `cuopt --help`
    from cuopt.rewrite.engine import Engine

    rules = Engine.default().rules
    if rule not in rules:
        return ""
    text = " ".join(rules[rule].why.split())
    return text.split(". ")[0].rstrip(".") + "."


def _rejected(trace: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in trace["candidates"]:
        if c["status"] != "ok" and c.get("duplicate_of") is None:
            groups[c["status"]].append(c)
    return dict(groups)


def _policy(trace: dict[str, Any]) -> str:
    """The policy's name and, for a model, its file name, the start of its digest and its uniform blend."""
    detail = trace.get("policy_detail") or {}
    if not detail.get("model"):
        return str(trace["policy"])
    blend = f", uniform blend {detail['uniform_blend']:g}" if detail.get("uniform_blend") else ""
    return f"{trace['policy']} ({Path(detail['model']).name}, sha256 {str(detail.get('sha256', ''))[:12]}{blend})"


def _steps(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return trace.get("chosen", {}).get("steps", [])


def _as_json(trace: dict[str, Any], path: Path, diff: bool) -> dict[str, Any]:
    steps = [{k: v for k, v in s.items() if k != "source"} for s in _steps(trace)]
    if diff:
        for s, (a, b) in zip(steps[1:], zip(_steps(trace), _steps(trace)[1:])):
            s["diff"] = _diff(a["source"], b["source"])
    return {"trace": str(path), "file": trace["file"], "kernel": trace["kernel"], "baseline": trace["baseline"],
            "result": trace["result"], "stop": trace.get("stop"), "steps": steps,
            "rejected": {k: [{"id": c["id"], "action": c["action"], "detail": c["detail"]} for c in v]
                         for k, v in _rejected(trace).items()},
            "confirmation": trace.get("confirmation"), "evaluations": _evaluations(trace),
            **({"resumed": _resumed(trace["resumed"])} if "resumed" in trace else {})}


def _resumed(resumed: dict[str, Any]) -> dict[str, Any]:
    """What a resumed search that left the result standing did: its seconds, evaluations, stop and outcome."""
    return {"seconds": resumed["seconds"], "evaluations": _evaluations(resumed), "stop": resumed.get("stop"),
            "outcome": resumed["outcome"], "confirmation": resumed.get("confirmation")}


def _evaluations(trace: dict[str, Any]) -> int:
    """Fresh measurements: not the original, not duplicates (of source or binary), not reused from the cache."""
    if "evaluations" in trace:
        return int(trace["evaluations"])
    return sum(1 for c in trace["candidates"] if c["parent"] is not None and c.get("duplicate_of") is None
               and not c.get("extra", {}).get("cached") and not c.get("extra", {}).get("same_binary_as"))


def _diff(a: str, b: str) -> str:
    return "".join(difflib.unified_diff(a.splitlines(keepends=True), b.splitlines(keepends=True), "before", "after"))


def _render(console: Any, trace: dict[str, Any], path: Path, diff: bool, all_candidates: bool) -> None:
    # deferred: loaded when the command runs, not at `cuopt --help`
    from rich.syntax import Syntax
    from rich.table import Table

    from cuopt.ui import fmt_ms

    base = trace["baseline"]["ms"]
    console.print(f"[bold]{Path(trace['file']).name}:{trace['kernel']}[/bold]  {trace['result']['status']}: "
                  f"{trace['result']['message']}")
    console.print(f"trace {path}; policy {_policy(trace)}, {_evaluations(trace)} evaluations, "
                  f"stopped: {trace.get('stop') or '-'}", markup=False)
    if "resumed" in trace:
        r = _resumed(trace["resumed"])
        console.print(f"resumed for {r['seconds']:.0f} s: {r['evaluations']} evaluations, stopped: {r['stop'] or '-'}; "
                      f"{r['outcome']}", markup=False)
    table = Table(title="chosen sequence")
    for col in ("step", "rewrite", "time", "speedup", "visits", "mean", "prior", "why"):
        table.add_column(col)
    steps = _steps(trace)
    for i, s in enumerate(steps):
        table.add_row(str(i), s["action"] or "original", fmt_ms(s["ms"]),
                      f"{base / s['ms']:.2f}x" if s["ms"] and base else "-", str(s["visits"]),
                      f"{s['mean_value']:.3f}", f"{s['prior']:.3f}" if s["action"] else "-", _why(s["rule"]))
    console.print(table)
    if diff:
        for a, b in zip(steps, steps[1:]):
            console.print(f"[bold]{b['action']}[/bold]  ({b['launch']})")
            console.print(Syntax(_diff(a["source"], b["source"]), "diff", theme="ansi_dark",
                                 background_color="default"))
    rejected = _rejected(trace)
    if rejected:
        console.print("[bold]rejected candidates[/bold]")
        for status, items in sorted(rejected.items(), key=lambda kv: -len(kv[1])):
            console.print(f"  {status}: {len(items)}", markup=False)
            for c in items[:3]:
                console.print(f"    {c['action']}: {c['detail'][:160]}", markup=False)
    conf = trace.get("confirmation")
    if conf:
        console.print(f"[bold]confirmation[/bold] (sanitizer: {conf['sanitizer']})")
        for a in conf["attempts"]:
            speed = f" ({a['speedup']:.2f}x)" if a.get("speedup") else ""
            console.print(f"  {' + '.join(a['sequence']) or '-'}{speed}: {a['verdict']}", markup=False)
    if all_candidates:
        t = Table(title="all candidates")
        for col in ("id", "parent", "rewrite", "status", "time", "speedup", "visits"):
            t.add_column(col)
        for c in trace["candidates"]:
            t.add_row(str(c["id"]), str(c["parent"]), c["action"] or "original", c["status"], fmt_ms(c["ms"]),
                      f"{base / c['ms']:.2f}x" if c["ms"] and base else "-", str(c["visits"]))
        console.print(t)
