"""`cuopt train collect`: self-play data on the GPU for the learned policy."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from cuopt.errors import CuoptError


def command(
    paths: Annotated[list[Path], typer.Argument(help="Corpus directories (see `cuopt train generate`) or .cu files.")],
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
) -> None:
    """Run the search on each kernel of a corpus on the GPU (no confirmation, nothing written back)
    and append one row per expanded variant to a dataset: its features, the rewrites offered on it
    with their features, the search's visit counts and the measured times (docs/policy.md)."""
    from cuopt import ui
    from cuopt.learn.collect import append, rows
    from cuopt.learn.corpus import split_targets
    from cuopt.rewrite.engine import Engine
    from cuopt.search.budget import Budget, parse_duration
    from cuopt.search.mcts import SearchOptions
    from cuopt.search.policy import load_policy

    if max_evals is not None and max_evals < 1:
        raise CuoptError("--max-evals must be at least 1")
    total = Budget(parse_duration(budget), None)
    search_opts = SearchOptions.from_pairs(search_option or [])
    targets, splits = split_targets(paths, split)
    engine = Engine.default()
    chosen = load_policy(policy, engine.priors)

    from cuopt.evaluate.device import open_gpu
    from cuopt.optimization.session import Settings, optimize_kernel

    client = open_gpu(timeout)
    settings = Settings(chosen, search_opts, seed, dry_run=True, confirm=False)
    device = client.device or {}
    console = ui.console()
    written = 0
    try:
        for i, target in enumerate(targets):
            if total.exhausted():
                ui.warn(f"the budget ran out after {i} of {len(targets)} kernels")
                break
            kernel_budget = Budget(max(1.0, total.share(len(targets) - i)), max_evals)
            result = optimize_kernel(target, client, engine, settings, kernel_budget, lambda *_: None, None)
            name = f"{target.path.name}:{target.kernel.name}"
            if result.search is None:
                console.print(f"{name}: skipped: {result.message}", markup=False, highlight=False)
                continue
            meta = {"kernel": target.kernel.name, "file": str(target.path),
                    "split": splits.get(target.kernel.name, "train"), "gpu": device.get("name", "")}
            new = rows(result.search, target.kernel.entry, target.spec, settings.options, device, meta,
                       target.source.macros)
            append(out, new)
            written += len(new)
            best = result.search.best(1)[0]
            console.print(f"{name}: {result.search.evaluations} evaluations, best "
                          f"{result.search.baseline_ms / best.measurement.ms:.2f}x, {len(new)} rows",  # type: ignore[union-attr]
                          markup=False, highlight=False)
    finally:
        client.close()
    console.print(f"appended {written} rows to {out}", markup=False, highlight=False)
