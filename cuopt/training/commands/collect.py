"""`cuopt-train collect`: self-play data on the GPU for the learned policy."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from cuopt import ui
from cuopt.search.mcts import SearchOptions


def command(
    paths: Annotated[list[Path], typer.Argument(help="Corpus directories (see `cuopt-train generate`) or .cu files.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Append the rows to this JSON Lines file.")],
    budget: Annotated[str, typer.Option(help="Wall-clock budget for the whole command, shared by the kernels.")] = "30m",
    max_evals: Annotated[Optional[int], typer.Option("--max-evals", help="At most this many evaluations per "
                                                     "kernel.")] = None,
    policy: Annotated[str, typer.Option(help="Search priors: heuristic, uniform, learned or a model file.")] = "heuristic",
    split: Annotated[str, typer.Option(help="Which kernels of the corpus: train, heldout or all.")] = "train",
    seed: Annotated[int, typer.Option(help="Search seed.")] = 0,
    search_option: Annotated[Optional[list[str]], typer.Option("--search-option", help="KEY=VALUE, as for "
                                                               "`cuopt optimize`.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds one launch may take before it counts as hung.")] = 10.0,
    gpus: Annotated[str, typer.Option(help="The local GPUs to search on: all, or indices such as 0,1.")] = "all",
    ray: Annotated[Optional[str], typer.Option(help="Run each kernel's search as a Ray task: local, auto or a "
                                               "cluster address.")] = None,
) -> None:
    """Run the search on each kernel of a corpus on the GPUs (no confirmation, nothing written back)
    and append one row per expanded variant to a dataset: its features, the rewrites offered on it
    with their features, the search's visit counts and the measured times (docs/policy.md)."""
    # deferred: the search, the GPU driver and the parser load when the command runs, not for --help
    from cuopt.api import budget_seconds, checked_max_evals, runner_for
    from cuopt.optimization.driver import Driver, Plan
    from cuopt.optimization.jobs import Options, cached_policy
    from cuopt.optimization.schedule import Equal
    from cuopt.training.collect import append, rows
    from cuopt.training.corpus import split_targets

    seconds, evals = budget_seconds(budget), checked_max_evals(max_evals)
    search = SearchOptions.from_pairs(search_option or [])
    targets, splits = split_targets(paths, split)
    cached_policy(policy)  # a bad --policy is an error before any GPU starts
    options = Options(policy, search, seed, timeout=timeout, backend=os.environ.get("CUOPT_GPU_BACKEND"),
                      schedule="equal", collector=rows)
    console = ui.console()
    written = 0

    def collected(result: Any, run: Any) -> None:
        nonlocal written
        name = f"{Path(result.file).name}:{result.kernel}"
        if run is None or run.status != "searched":
            console.print(f"{name}: skipped: {result.message}", markup=False, highlight=False)
            return
        append(out, run.rows)
        written += len(run.rows)
        console.print(f"{name}: {result.evaluations} evaluations, best "
                      f"{result.baseline_ms / (run.probe.best_ms or result.baseline_ms):.2f}x, {len(run.rows)} rows",
                      markup=False, highlight=False)

    runner, _ = runner_for(gpus, ray, options, None)
    plan = Plan(seconds, evals, confirm=False, splits=splits)
    try:
        results = Driver(targets, options, runner, Equal(), plan, collected).run()
    finally:
        runner.close()
    left = sum(1 for r in results if r.status == "skipped" and r.message.startswith("the budget ran out"))
    if left:
        ui.warn(f"the budget ran out after {len(targets) - left} of {len(targets)} kernels")
    console.print(f"appended {written} rows to {out}", markup=False, highlight=False)
