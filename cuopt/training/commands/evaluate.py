"""`cuopt-train evaluate`: search-efficiency curves of policies on held-out kernels (GPU)."""
from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from cuopt import __version__, ui
from cuopt.errors import CuoptError
from cuopt.search.budget import Budget, parse_duration
from cuopt.search.mcts import SearchOptions
from cuopt.search.policies import POLICIES, load_policy, names_a_model
from cuopt.training.curves import TARGET_FRACTION, KernelRuns, Run, curve, kernel_json, scored, summary, svg


def command(
    paths: Annotated[list[Path], typer.Argument(help="Corpus directories (see `cuopt-train generate`) or .cu files.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Write the curves, metrics and summary to this JSON file.")],
    max_evals: Annotated[int, typer.Option("--max-evals", help="Evaluations of each policy's search.")],
    policies: Annotated[str, typer.Option(help="Comma-separated: heuristic, uniform, learned or model "
                                          "files.")] = "heuristic,uniform",
    reference_evals: Annotated[Optional[int], typer.Option("--reference-evals", help="Also run a long "
                                                           "uniform search of this many evaluations per "
                                                           "kernel.")] = None,
    split: Annotated[str, typer.Option(help="Which kernels of the corpus: train, heldout or all.")] = "heldout",
    seeds: Annotated[str, typer.Option(help="Comma-separated search seeds; one search per policy and seed.")] = "0",
    budget: Annotated[str, typer.Option(help="Wall-clock budget for the whole command, shared by the "
                                        "searches.")] = "30m",
    plot: Annotated[Optional[Path], typer.Option(help="Write the curves as an SVG plot.")] = None,
    search_option: Annotated[Optional[list[str]], typer.Option("--search-option", help="KEY=VALUE, as for "
                                                               "`cuopt optimize`.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds one launch may take before it counts as hung.")] = 10.0,
) -> None:
    """Search each kernel of a split with each policy and seed (nothing written back), record the
    best speedup after every evaluation, and report how many evaluations each policy needs to reach
    95% of the best speedup found and where it ends (docs/policy.md). The searches of one kernel
    share their measurements: each distinct variant is timed once, and counts as an evaluation of
    every search that asks for it."""
    names = parse_policies(policies)
    seed_list = parse_seeds(seeds)
    if max_evals < 1:
        raise CuoptError("--max-evals must be at least 1")
    if reference_evals is not None and reference_evals < max_evals:
        raise CuoptError("--reference-evals must be at least --max-evals")
    argv = ["cuopt-train", "evaluate", *map(str, paths), "--policies", ",".join(names), "--max-evals",
            str(max_evals), *(["--reference-evals", str(reference_evals)] if reference_evals is not None else []),
            "--split", split, "--seeds", ",".join(map(str, seed_list)), "--budget", budget, "-o", str(out),
            *(["--plot", str(plot)] if plot is not None else []),
            *(a for o in search_option or [] for a in ("--search-option", o))]
    plan = Plan(paths, names, seed_list, max_evals, reference_evals, split, parse_duration(budget),
                SearchOptions.from_pairs(search_option or []), timeout, shlex.join(argv))
    Evaluation(plan).run(out, plot)


def parse_policies(text: str) -> list[str]:
    """Policy names from a comma-separated list: known names or model files, each once."""
    names = [n.strip() for n in text.split(",")]
    if not all(names) or len(set(names)) != len(names):
        raise CuoptError(f"--policies {text!r}: expected distinct comma-separated policy names")
    for n in names:
        if n not in POLICIES and not names_a_model(n):
            raise CuoptError(f"--policies {text!r}: unknown policy {n!r}; expected {', '.join(POLICIES)} "
                             f"or a model file")
    return names


def parse_seeds(text: str) -> list[int]:
    """Distinct integer seeds from a comma-separated list."""
    try:
        seeds = [int(s) for s in text.split(",")]
    except ValueError:
        raise CuoptError(f"--seeds {text!r}: expected comma-separated integers") from None
    if len(set(seeds)) != len(seeds):
        raise CuoptError(f"--seeds {text!r}: a seed is repeated")
    return seeds


REFERENCE_SEED_OFFSET = 1000  # the reference's seed: this plus the largest of --seeds


@dataclass(frozen=True)
class Job:
    """One search of a kernel; the reference is the long uniform one."""

    policy: str
    seed: int
    evals: int
    reference: bool = False


@dataclass(frozen=True)
class Plan:
    """What the command was asked to do."""

    paths: list[Path]
    policies: list[str]
    seeds: list[int]
    max_evals: int
    reference_evals: int | None
    split: str
    seconds: float
    search: SearchOptions
    timeout: float
    command_line: str

    @property
    def reference_seed(self) -> int:
        return REFERENCE_SEED_OFFSET + max(self.seeds)

    def jobs(self) -> list[Job]:
        """Per kernel: the reference search, then each policy with each seed. The reference goes
        first: it measures most of what the others ask for, in its share of the time. Its seed is
        none of the policies' seeds: otherwise the uniform search of that seed would be the
        reference's own first evaluations and reach its target by construction."""
        jobs = [Job(p, s, self.max_evals) for p in self.policies for s in self.seeds]
        if self.reference_evals is not None:
            jobs.insert(0, Job("uniform", self.reference_seed, self.reference_evals, reference=True))
        return jobs


@dataclass
class Searched:
    """A kernel and its searches so far; complete once every job ran."""

    target: Any
    runs: KernelRuns
    complete: bool = False
    measured: int = 0  # distinct variants the GPU measured for all the searches together


@dataclass
class Evaluation:
    """The searches of every kernel, in order under one wall-clock budget, and their report."""

    plan: Plan
    kernels: list[Searched] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    stopped: str = ""
    device: dict[str, Any] = field(default_factory=dict)

    def run(self, out: Path, plot: Path | None) -> None:
        # deferred: the rewrite engine (tree-sitter) and the GPU load when the command runs, not for --help
        from cuopt.evaluate.device import open_gpu
        from cuopt.rewrite.engine import Engine

        targets = self._targets()
        engine = Engine.default()
        policies = {p: load_policy(p, engine.priors) for p in [*self.plan.policies, "uniform"]}
        client = open_gpu(self.plan.timeout)
        self.device = client.device or {}
        try:
            self._search_all(targets, client, engine, policies, out)
        except KeyboardInterrupt:
            self.stopped = "interrupted"
        finally:
            client.close()
        if self.stopped:
            ui.warn(f"{self.stopped}; {out} has what was measured")
        self._write(out)
        self._print()
        if plot is not None:
            self._plot(plot)

    def _targets(self) -> list[Any]:
        from cuopt.training.corpus import split_targets  # deferred: the corpus parses kernels (tree-sitter)

        return split_targets(self.plan.paths, self.plan.split)[0]

    def _search_all(self, targets: list[Any], client: Any, engine: Any, policies: dict[str, Any], out: Path) -> None:
        """Every job on every kernel while the budget lasts, each with its share of what is left in
        proportion to its evaluations; the JSON is rewritten after each kernel."""
        # deferred: the search session (numpy, the evaluator) loads when the command runs, not for --help
        from cuopt.optimization.environment import SharedMeasurements
        from cuopt.optimization.session import Settings, optimize_kernel

        total = Budget(self.plan.seconds, None)
        jobs = self.plan.jobs()
        per_kernel = sum(j.evals for j in jobs)
        for t, target in enumerate(targets):
            searched = Searched(target, KernelRuns(target.kernel.name))
            shared = SharedMeasurements()
            self.kernels.append(searched)
            for i, job in enumerate(jobs):
                if total.exhausted():
                    if i == 0:
                        self.kernels.remove(searched)
                    self.stopped = (f"the budget ran out with {len(self.complete())} of {len(targets)} kernels "
                                    f"searched by every policy (the summary counts only those)")
                    return
                left = sum(j.evals for j in jobs[i:]) + per_kernel * (len(targets) - t - 1)
                settings = Settings(policies[job.policy], self.plan.search, job.seed, confirm=False,
                                    shared=shared)
                result = optimize_kernel(target, client, engine, settings,
                                         Budget(max(1.0, total.remaining * job.evals / left), job.evals),
                                         lambda *_: None, None)
                if result.search is None:
                    self._skip(searched, result.message)
                    break
                if result.stop_reason == "interrupted":
                    raise KeyboardInterrupt
                points = curve(result.search)
                run = Run(job.policy, job.seed, points, result.stop_reason,
                          truncated=len(points) - 1 < job.evals and not result.search.root.exhausted,
                          best=result.search.best(1)[0].sequence)
                if job.reference:
                    searched.runs.reference = run
                else:
                    searched.runs.runs.append(run)
                searched.measured = len(shared.entries)
            else:
                searched.complete = True
            self._write(out)

    def _skip(self, searched: Searched, message: str) -> None:
        target = searched.target
        self.kernels.remove(searched)
        self.skipped.append({"kernel": target.kernel.name, "file": str(target.path), "reason": message})
        ui.console().print(f"{target.path.name}:{target.kernel.name}: skipped: {message}", markup=False,
                           highlight=False)

    def complete(self) -> list[KernelRuns]:
        """The kernels every search finished on: the only ones the summary and the plot use."""
        return [k.runs for k in self.kernels if k.complete]

    def summary(self) -> dict[str, Any]:
        return summary(self.complete(), self.plan.policies, self.plan.max_evals)

    def report(self) -> dict[str, Any]:
        plan = self.plan
        return {"tool": f"cuopt {__version__}", "command": plan.command_line,
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "device": self.device.get("name", ""),
                "split": plan.split, "policies": plan.policies, "seeds": plan.seeds, "max_evals": plan.max_evals,
                "reference_evals": plan.reference_evals,
                "reference_seed": plan.reference_seed if plan.reference_evals is not None else None,
                "target_fraction": TARGET_FRACTION, "stopped": self.stopped,
                "kernels": [{"file": str(k.target.path), "complete": k.complete, "measured_variants": k.measured,
                             **kernel_json(k.runs, plan.policies, plan.max_evals)} for k in self.kernels],
                "skipped": self.skipped, "summary": self.summary()}

    def _write(self, out: Path) -> None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(self.report(), indent=1) + "\n")

    def _print(self) -> None:
        print_results([(k.runs, k.complete) for k in self.kernels], self.plan.policies, self.plan.max_evals,
                      self.plan.split)

    def _plot(self, plot: Path) -> None:
        write_plot(plot, self.complete(), self.plan.policies, self.plan.max_evals, self.plan.split)


def print_results(kernels: list[tuple[KernelRuns, bool]], policies: list[str], max_evals: int, split: str) -> None:
    """The table (per kernel, with whether every search ran) and the summary lines."""
    console = ui.console()
    table = Table("kernel", "reference", *(f"{p}: evals to 95% / final" for p in policies))
    for runs, complete in kernels:
        cells = [policy_cell(runs, p, max_evals) if runs.of(p) else "-" for p in policies]
        table.add_row(runs.kernel + ("" if complete else " (incomplete)"), f"{runs.reference_speedup():.3f}x", *cells)
    console.print(table)
    done = [runs for runs, complete in kernels if complete]
    for line in summary_lines(summary(done, policies, max_evals), split, max_evals):
        console.print(line, markup=False, highlight=False)


def policy_cell(runs: KernelRuns, policy: str, max_evals: int) -> str:
    """Evaluations to 95% and final speedup; `cut at N` (the fewest evaluations of such a search)
    when a search of the policy was truncated short of the target, its evaluations to 95% unknown."""
    cut = [len(r.curve) - 1 for r in runs.cut_short() if r.policy == policy]
    evals = f"cut at {min(cut)}" if cut else evals_text(runs.evals_to_target(policy, max_evals), max_evals)
    return f"{evals} / {runs.final(policy):.3f}x"


def write_plot(plot: Path, kernels: list[KernelRuns], policies: list[str], max_evals: int, split: str) -> None:
    """The SVG of the scored kernels' curves; a warning instead when there are none."""
    chosen = scored(kernels)
    if not chosen:
        ui.warn(f"no kernel to score (every search complete, a reference speedup of at least "
                f"the minimum, no search truncated short of the target); {plot} not written")
        return
    title = f"Best speedup against evaluations: geometric mean over {len(chosen)} {split} kernels"
    plot.parent.mkdir(parents=True, exist_ok=True)
    plot.write_text(svg(chosen, policies, max_evals, title))


def evals_text(value: float | None, max_evals: int) -> str:
    """Evaluations to 95%, `>N` when not reached within N."""
    if value is None:
        return "-"
    return f">{max_evals}" if value > max_evals else f"{value:g}"


def summary_lines(summary: dict[str, Any], split: str, max_evals: int) -> list[str]:
    """The summary as text: medians per policy, then the criterion per learned policy."""
    def yes(v: bool | None) -> str:
        return "-" if v is None else "yes" if v else "no"

    lines = [(f"median over {summary['kernels']} {split} kernels (evaluations to 95% of the reference, "
              f"final speedup after {max_evals}):")]
    if summary["below_min_speedup"]:
        lines[0:0] = [f"not scored, reference speedup under {summary['min_reference_speedup']:g}x: "
                      f"{', '.join(summary['below_min_speedup'])}"]
    if summary["truncated"]:
        lines[0:0] = [f"not scored, a search ran out of time short of the target: {', '.join(summary['truncated'])}"]
    for p, s in summary["policies"].items():
        final = s["median_final_speedup"]
        lines.append(f"  {p}: {evals_text(s['median_evals_to_95'], max_evals)}, "
                     f"{'-' if final is None else f'{final:.3f}x'}")
    for c in summary["criteria"]:
        lines.append(f"{c['policy']} vs {' and '.join(c['against'])}: at most half the evaluations "
                     f"{yes(c['at_most_half_the_evaluations'])}, final speedup not lower {yes(c['final_not_lower'])}")
        if summary["kernels"]:
            lines.append("  final speedup kernel by kernel: " + "; ".join(
                f"vs {b} {n['higher']} higher, {n['equal']} equal, {n['lower']} lower"
                for b, n in c["final_by_kernel"].items()))
    if not summary["criteria"]:
        lines.append("no learned policy with heuristic or uniform to compare: the criterion is not evaluated")
    return lines
