"""Search-efficiency curves: the best speedup a search had found after k fresh evaluations, the
metrics `cuopt-train evaluate` reports from them (evaluations to 95% of a reference, final
speedup, medians over kernels) and a plot of them as plain SVG (docs/policy.md)."""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence
from xml.sax.saxutils import escape, quoteattr

TARGET_FRACTION = 0.95  # of the reference's log-speedup gain
MIN_REFERENCE_SPEEDUP = 1.10  # below it, 95% of the gain lies within timing noise: not scored
BASELINES = ("heuristic", "uniform")  # the priors a learned policy is compared with
PANELS_PER_ROW, PANEL_W, PANEL_H = 4, 140, 130  # the small per-kernel panels
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


class SearchLike(Protocol):
    """What `curve` reads of a finished search (`cuopt.search.mcts.MCTS`)."""

    baseline_ms: float
    nodes: Sequence[Any]
    evaluations: int


def curve(search: SearchLike) -> list[float]:
    """Best speedup over the original after k = 0..evaluations fresh evaluations (1.0 at k = 0).
    A node counts from its `evaluated_at`; duplicates and cache hits, which have none, add nothing."""
    n = search.evaluations
    fastest = [search.baseline_ms] * (n + 1)
    for node in search.nodes:
        m, k = node.measurement, node.evaluated_at
        if k is not None and k <= n and m is not None and m.ok:
            fastest[k] = min(fastest[k], m.ms)
    out, best = [], search.baseline_ms
    for ms in fastest:
        best = min(best, ms)
        out.append(search.baseline_ms / best)
    return out


def evals_to_reach(points: Sequence[float], target: float) -> int | None:
    """The first k where the curve reaches `target`; None if it never does."""
    return next((k for k, s in enumerate(points) if s >= target), None)


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


@dataclass
class Run:
    """One search: its policy, seed, curve and why it stopped; `truncated` when the time budget
    stopped it before its evaluations were done (and the tree was not exhausted); `best` the
    rewrite ids that made its fastest variant (empty: the original; None: not recorded)."""

    policy: str
    seed: int
    curve: list[float]
    stop: str = ""
    truncated: bool = False
    best: list[str] | None = None

    @property
    def final(self) -> float:
        return self.curve[-1]

    def at(self, k: int) -> float:
        """The curve at k, flat after the search's last evaluation."""
        return self.curve[min(k, len(self.curve) - 1)]


@dataclass
class KernelRuns:
    """Every search of one kernel, and the optional long uniform reference search."""

    kernel: str
    runs: list[Run] = field(default_factory=list)
    reference: Run | None = None

    def reference_speedup(self) -> float:
        """The best final speedup of any search of this kernel, the reference's included."""
        return max([r.final for r in self.runs] + ([self.reference.final] if self.reference else []), default=1.0)

    def target(self) -> float:
        """The speedup holding 95% of the reference's log-speedup gain."""
        return self.reference_speedup() ** TARGET_FRACTION

    def of(self, policy: str) -> list[Run]:
        return [r for r in self.runs if r.policy == policy]

    def cut_short(self) -> list[Run]:
        """The searches truncated before they reached the target: their evaluations to 95% are
        unknown (the slow kernel's time ran out, not the search's evaluations)."""
        target = self.target()
        return [r for r in self.runs if r.truncated and evals_to_reach(r.curve, target) is None]

    def evals_to_target(self, policy: str, max_evals: int) -> float:
        """Median over seeds of the evaluations to the target; never reaching it counts as max_evals + 1."""
        target = self.target()
        counts = [evals_to_reach(r.curve, target) for r in self.of(policy)]
        return statistics.median([max_evals + 1 if c is None else c for c in counts])

    def final(self, policy: str) -> float:
        """Median over seeds of the final speedup."""
        return statistics.median([r.final for r in self.of(policy)])


def run_json(run: Run, target: float) -> dict[str, Any]:
    return {"policy": run.policy, "seed": run.seed, "evaluations": len(run.curve) - 1, "stop": run.stop,
            "truncated": run.truncated, "final_speedup": round(run.final, 6),
            "evals_to_95": evals_to_reach(run.curve, target), "best": run.best, "curve": [round(s, 6) for s in run.curve]}


def kernel_json(k: KernelRuns, policies: Sequence[str], max_evals: int) -> dict[str, Any]:
    """A kernel's runs with their metrics; per policy the medians over seeds (when it has runs)."""
    target = k.target()
    return {"kernel": k.kernel, "reference_speedup": round(k.reference_speedup(), 6), "target_speedup": round(target, 6),
            "policies": {p: {"evals_to_95": k.evals_to_target(p, max_evals), "final_speedup": round(k.final(p), 6)}
                         for p in policies if k.of(p)},
            "runs": [run_json(r, target) for r in k.runs],
            "reference": run_json(k.reference, target) if k.reference else None}


def unscored(k: KernelRuns) -> str | None:
    """Why the summary does not score a kernel: "below_min_speedup" when no search found
    MIN_REFERENCE_SPEEDUP (every search reaches "95%" at once or by noise, which says nothing of a
    policy), "truncated" when a search was cut short of the target; None when it is scored."""
    if k.reference_speedup() < MIN_REFERENCE_SPEEDUP:
        return "below_min_speedup"
    return "truncated" if k.cut_short() else None


def scored(kernels: Sequence[KernelRuns]) -> list[KernelRuns]:
    """The kernels the summary scores (see `unscored`)."""
    return [k for k in kernels if unscored(k) is None]


def summary(all_kernels: Sequence[KernelRuns], policies: Sequence[str], max_evals: int) -> dict[str, Any]:
    """Medians over the scored kernels per policy, and for each policy other than heuristic and
    uniform whether it needs at most half their evaluations to 95% and ends no lower than they do."""
    kernels = scored(all_kernels)
    stats = {p: {"median_evals_to_95": median([k.evals_to_target(p, max_evals) for k in kernels]),
                 "median_final_speedup": _rounded(median([k.final(p) for k in kernels])),
                 "runs_not_reaching_95": sum(evals_to_reach(r.curve, k.target()) is None
                                             for k in kernels for r in k.of(p))}
             for p in policies}
    baselines = [p for p in BASELINES if p in stats]
    criteria = [_criterion(p, baselines, stats, kernels) for p in policies if p not in BASELINES and baselines]
    reasons = [(k.kernel, unscored(k)) for k in all_kernels]
    return {"kernels": len(kernels), "min_reference_speedup": MIN_REFERENCE_SPEEDUP,
            **{why: [name for name, r in reasons if r == why] for why in ("below_min_speedup", "truncated")},
            "unreached_counts_as": max_evals + 1, "policies": stats, "criteria": criteria}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def by_kernel(kernels: Sequence[KernelRuns], policy: str, baseline: str) -> dict[str, int]:
    """On how many kernels `policy`'s final speedup is higher than, equal to or lower than
    `baseline`'s: the paired view that the medians over kernels leave out."""
    out = {"higher": 0, "equal": 0, "lower": 0}
    for k in kernels:
        mine, theirs = round(k.final(policy), 6), round(k.final(baseline), 6)
        out["higher" if mine > theirs else "equal" if mine == theirs else "lower"] += 1
    return out


def _criterion(policy: str, baselines: list[str], stats: dict[str, dict[str, Any]],
               kernels: Sequence[KernelRuns]) -> dict[str, Any]:
    evals, final = stats[policy]["median_evals_to_95"], stats[policy]["median_final_speedup"]
    half = final_ok = None
    if evals is not None:
        half = all(evals <= 0.5 * stats[b]["median_evals_to_95"] for b in baselines)
        final_ok = all(final >= stats[b]["median_final_speedup"] for b in baselines)
    return {"policy": policy, "against": baselines, "at_most_half_the_evaluations": half,
            "final_not_lower": final_ok, "met": None if half is None else half and final_ok,
            "final_by_kernel": {b: by_kernel(kernels, policy, b) for b in baselines}}


def mean_curve(kernels: Sequence[KernelRuns], policy: str, max_evals: int) -> list[float]:
    """Geometric mean over the kernels' runs of `policy` of the best speedup at k = 0..max_evals."""
    runs = [r for k in kernels for r in k.of(policy)]
    return [math.exp(statistics.fmean(math.log(r.at(k)) for r in runs)) for k in range(max_evals + 1)]


# -- the plot ------------------------------------------------------------------------------------

@dataclass
class _Box:
    """A plot area in SVG coordinates and the data range it shows (y from 1.0 up)."""

    x: float
    y: float
    w: float
    h: float
    xmax: int
    ymax: float

    def px(self, k: float) -> float:
        return self.x + self.w * k / max(1, self.xmax)

    def py(self, s: float) -> float:
        return self.y + self.h * (1.0 - (s - 1.0) / (self.ymax - 1.0))


def svg(kernels: Sequence[KernelRuns], policies: Sequence[str], max_evals: int, title: str,
        per_kernel: bool = True) -> str:
    """One panel with the geometric-mean curve per policy and, optionally, a small panel per kernel.
    Every kernel needs at least one run of each policy."""
    colors = {p: COLORS[i % len(COLORS)] for i, p in enumerate(policies)}
    curves = {p: mean_curve(kernels, p, max_evals) for p in policies}
    target = math.exp(statistics.fmean(math.log(k.target()) for k in kernels))
    main = _Box(70, 50, 520, 300, max_evals, _top(max(max(c) for c in curves.values()), target))
    rows = math.ceil(len(kernels) / PANELS_PER_ROW) if per_kernel else 0
    width, height = 820, 410 + rows * (PANEL_H + 60)
    out = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">'),
           _el("rect", width=width, height=height, fill="white"),
           _el("text", title, x=width / 2, y=26, text_anchor="middle", font_size=15),
           '<g id="summary">', *_axes(main, 6, 6, "fresh evaluations", "best speedup (x)"), _target(main, target),
           *(_curve(main, curves[p], colors[p], p, 2.0) for p in policies), "</g>",
           *_legend(main.x + main.w + 20, main.y, policies, colors)]
    for i, k in enumerate(kernels if per_kernel else []):
        x, y = 60 + (i % PANELS_PER_ROW) * (PANEL_W + 60), 440 + (i // PANELS_PER_ROW) * (PANEL_H + 60)
        out += _kernel_panel(k, policies, colors, max_evals, x, y)
    return "\n".join([*out, "</svg>"]) + "\n"


def _kernel_panel(k: KernelRuns, policies: Sequence[str], colors: dict[str, str], max_evals: int,
                  x: float, y: float) -> list[str]:
    curves = {p: mean_curve([k], p, max_evals) for p in policies if k.of(p)}
    box = _Box(x, y, PANEL_W, PANEL_H, max_evals, _top(max(max(c) for c in curves.values()), k.target()))
    return [f'<g class="kernel" id={quoteattr("kernel-" + k.kernel)} font-size="10">',
            _el("text", k.kernel, x=box.x + box.w / 2, y=box.y - 8, text_anchor="middle"),
            *_axes(box, 3, 3, "", ""), _target(box, k.target()),
            *(_curve(box, c, colors[p], p, 1.2) for p, c in curves.items()), "</g>"]


def _el(tag: str, text: str | None = None, **attrs: Any) -> str:
    """One SVG element; floats with one decimal, `_` in attribute names as `-`, text escaped."""
    parts = " ".join(f"{k.rstrip('_').replace('_', '-')}={quoteattr(f'{v:.1f}' if isinstance(v, float) else str(v))}"
                     for k, v in attrs.items())
    return f"<{tag} {parts}/>" if text is None else f"<{tag} {parts}>{escape(text)}</{tag}>"


def _top(highest: float, target: float) -> float:
    """The y-axis maximum: a little above the highest value shown, and above 1.0."""
    return max(1.1, 1.0 + 1.08 * (max(highest, target) - 1.0))


def _ticks(lo: float, hi: float, count: int, integer: bool) -> list[float]:
    """Round tick values from lo to hi, about `count` steps."""
    raw = (hi - lo) / count
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in ((1, 2, 5, 10) if integer else (1, 2, 2.5, 5, 10)) if m * mag >= raw)
    step = max(1.0, step) if integer else step
    first = math.ceil(lo / step - 1e-9) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _axes(box: _Box, xcount: int, ycount: int, xlabel: str, ylabel: str) -> list[str]:
    bottom, right = box.y + box.h, box.x + box.w
    out = [_el("rect", x=box.x, y=box.y, width=box.w, height=box.h, fill="none", stroke="#444")]
    for k in _ticks(0, box.xmax, xcount, True):
        out += [_el("line", x1=box.px(k), y1=bottom, x2=box.px(k), y2=bottom + 4, stroke="#444"),
                _el("text", f"{k:g}", x=box.px(k), y=bottom + 16, text_anchor="middle")]
    for s in _ticks(1.0, box.ymax, ycount, False):
        out += [_el("line", x1=box.x, y1=box.py(s), x2=right, y2=box.py(s), stroke="#ddd"),
                _el("text", f"{round(s, 6):g}", x=box.x - 6, y=box.py(s) + 4, text_anchor="end")]
    if xlabel:
        out.append(_el("text", xlabel, x=box.x + box.w / 2, y=bottom + 36, text_anchor="middle"))
    if ylabel:
        cx, cy = box.x - 48, box.y + box.h / 2
        out.append(_el("text", ylabel, x=cx, y=cy, text_anchor="middle", transform=f"rotate(-90 {cx:.1f} {cy:.1f})"))
    return out


def _target(box: _Box, speedup: float) -> str:
    """The dashed line at 95% of the reference."""
    y = box.py(speedup)
    return _el("line", class_="target", x1=box.x, y1=y, x2=box.x + box.w, y2=y, stroke="#888",
               stroke_dasharray="5,4")


def _curve(box: _Box, points: Sequence[float], color: str, policy: str, width: float) -> str:
    """A step curve: the best speedup holds until the evaluation that improves it."""
    xy = [(0, points[0])]
    for k in range(1, len(points)):
        if points[k] != points[k - 1]:
            xy += [(k, points[k - 1]), (k, points[k])]
    xy.append((len(points) - 1, points[-1]))
    coords = " ".join(f"{box.px(k):.1f},{box.py(s):.1f}" for k, s in xy)
    return _el("polyline", data_policy=policy, points=coords, fill="none", stroke=color, stroke_width=width)


def _legend(x: float, y: float, policies: Sequence[str], colors: dict[str, str]) -> list[str]:
    entries = [(p, {"stroke": colors[p], "stroke_width": 2.0}) for p in policies]
    entries.append(("95% of the reference", {"stroke": "#888", "stroke_dasharray": "5,4"}))
    out = []
    for i, (label, style) in enumerate(entries):
        ly = y + 10.0 + 20 * i
        out += [_el("line", x1=x, y1=ly, x2=x + 24, y2=ly, **style), _el("text", label, x=x + 30, y=ly + 4)]
    return out
