"""`cuopt optimize`: search rewrites on the GPU and write back the fastest confirmed variant."""
from __future__ import annotations

import contextlib
import sys
import threading
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from cuopt.commands import compile_options
from cuopt.errors import CuoptError, NoGpuError
from cuopt.search.mcts import SearchOptions

SEARCH_OPTIONS = ", ".join(k.replace("_", "-") for k in vars(SearchOptions()))


def command(
    paths: Annotated[list[Path], typer.Argument(help="The .cu files (or directories) to optimize.")],
    kernel: Annotated[Optional[str], typer.Option("--kernel", "-k", help="Only this kernel.")] = None,
    budget: Annotated[str, typer.Option(help="Wall-clock budget for the whole command: 30s, 10m, 1h.")] = "10m",
    max_evals: Annotated[Optional[int], typer.Option("--max-evals", help="At most this many evaluations "
                                                     "per kernel.")] = None,
    seed: Annotated[int, typer.Option(help="Search seed (same measurements, same search).")] = 0,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Write the result here instead of in "
                                                "place (one file only).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Write nothing. Without a GPU: list and compile the "
                                          "first rewrites, ranked by the policy.")] = False,
    keep_launch: Annotated[bool, typer.Option("--keep-launch", help="Only rewrites that keep the launch "
                                              "(block and grid).")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    policy: Annotated[Optional[str], typer.Option(help="Search priors: heuristic, uniform, learned "
                      "(models/policy.safetensors) or a model file. Default: learned when that model is installed, "
                      "else heuristic.")] = None,
    fast_math: Annotated[bool, typer.Option("--fast-math", help="Allow rewrites that need fast-math.")] = False,
    threshold: Annotated[float, typer.Option(help="Required speedup over the measured spread (0.03 = 3%).")] = 0.03,
    sanitizer: Annotated[bool, typer.Option("--sanitizer/--no-sanitizer", help="Run compute-sanitizer on "
                                            "the result before writing it.")] = True,
    cache: Annotated[bool, typer.Option("--cache/--no-cache", help="Reuse measurements from earlier runs.")] = True,
    search_option: Annotated[Optional[list[str]], typer.Option("--search-option", help="KEY=VALUE: "
                             f"{SEARCH_OPTIONS} (docs/optimize.md).")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds one launch may take before it counts as hung.")] = 10.0,
    gpus: Annotated[str, typer.Option(help="The local GPUs to search on: all, or indices such as 0,1.")] = "all",
    ray: Annotated[Optional[str], typer.Option(help="Run each kernel's search as a Ray task: local (a Ray "
                                               "instance on this machine), auto or a cluster address.")] = None,
    schedule: Annotated[str, typer.Option(help="How the budget is split: headroom (a minimum for every kernel, "
                                          "the rest where it is expected to pay) or equal.")] = "headroom",
    diff: Annotated[bool, typer.Option("--diff/--no-diff", help="Show the diff in the summary.")] = True,
    include: compile_options.Include = None,
    define: compile_options.Define = None,
    nvcc_flag: compile_options.NvccFlag = None,
) -> None:
    """Search sequences of rewrites (MCTS), validate and time every candidate on the GPUs, confirm
    the best (fresh inputs, compute-sanitizer, interleaved re-timing) and write it back atomically
    (the original is kept under .cuopt/backups/). Kernels of different files run at once, one per GPU."""
    # deferred: loaded when the command runs, not at `cuopt --help`
    from cuopt import api, ui
    from cuopt.optimization.report import render

    said: set[str] = set()

    def warn(message: str) -> None:  # once each, though a dry run without a GPU reads the files twice
        if message not in said:
            said.add(message)
            ui.warn(message)

    common = dict(kernel=kernel, keep_launch=keep_launch, policy=policy, fast_math=fast_math,
                  include=include or (), define=define or (), nvcc_flags=nvcc_flag or (), warn=warn)
    console = ui.console()
    board = _Board(console, json_out)

    def shown(result: Any) -> None:
        board.finish(result.file)
        if not json_out:
            board.print(lambda: render(console, result, show_diff=diff))

    quiet = contextlib.redirect_stdout(sys.stderr) if json_out else contextlib.nullcontext()
    try:
        with board, quiet:  # with --json, stdout holds the JSON alone (Ray prints worker failures there)
            results = api.optimize(paths, budget=budget, max_evals=max_evals, seed=seed, out=out, dry_run=dry_run,
                                   threshold=threshold, sanitizer=sanitizer, cache=cache,
                                   search_options=search_option or (), timeout=timeout, gpus=gpus, ray=ray,
                                   schedule=schedule, on_result=shown, progress=board.update, **common)
    except NoGpuError:
        if not dry_run:
            raise
        with contextlib.redirect_stdout(sys.stderr) if json_out else contextlib.nullcontext():
            rows = api.first_rewrites(paths, ray=ray, **common)
        _cpu_dry_run(rows, api.resolve_policy(policy, lambda s: None), json_out)
        # deferred: loaded when the command runs, not at `cuopt --help`
        from cuopt.optimization.jobs import nothing_compiles

        failed = nothing_compiles(rows)
        if failed is not None:
            raise CuoptError(failed)
        return
    if json_out:
        objs = [r.json() for r in results]
        ui.print_json(objs[0] if len(objs) == 1 else objs)
    if any(r.status == "error" for r in results):
        raise typer.Exit(1)


class _Board:
    """A live line per running kernel on a terminal; plain lines on new phases and bests otherwise.
    Searches report from their GPU threads; results are printed above the live lines."""

    def __init__(self, console: Any, quiet: bool) -> None:
        self.console, self.quiet = console, quiet
        self.live: Any = None
        self.lines: dict[str, str] = {}
        self.last: dict[str, tuple[str, float]] = {}  # kernel -> (phase, best) last printed
        self.lock = threading.Lock()

    def __enter__(self) -> _Board:
        if not self.quiet and self.console.is_terminal:
            # deferred: loaded when the command runs, not at `cuopt --help`
            from rich.live import Live

            self.live = Live(self._render(), console=self.console, refresh_per_second=4, transient=True)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def update(self, name: str, phase: str, search: Any) -> None:
        if self.quiet:
            return
        best = search.baseline_ms / search.best(1)[0].measurement.ms if search is not None else 1.0
        with self.lock:
            self.lines[name] = _line(name, phase, search)
            if self.live is not None:
                self.live.update(self._render())
                return
            old_phase, old_best = self.last.get(name, ("", 1.0))
            if phase != old_phase or best > old_best * 1.001:
                self.last[name] = (phase, max(best, old_best))
                self.console.print(_line(name, phase, search), markup=False, highlight=False)

    def finish(self, file: str) -> None:
        """A kernel of `file` has its result: its line goes (a file's kernels run one at a time)."""
        with self.lock:
            for name in [n for n in self.lines if n.rsplit(":", 1)[0] == file]:
                del self.lines[name]
            if self.live is not None:
                self.live.update(self._render())

    def print(self, show: Any) -> None:
        with self.lock:
            show()

    def _render(self) -> Any:
        # deferred: loaded when the command runs, not at `cuopt --help`
        from rich.text import Text

        return Text("\n".join(self.lines.values()) or "starting")


def _line(name: str, phase: str, search: Any) -> str:
    head = f"{Path(name).name} [{phase}]"
    if search is None:
        return head
    best = search.best(1)[0]
    failures = sum(1 for n in search.nodes if n.measurement is not None and not n.measurement.ok)
    seq = " → ".join(best.sequence) or "original"
    return (f"{head}  evals {search.evaluations}  failures {failures}  "
            f"best {search.baseline_ms / best.measurement.ms:.2f}x  {seq}")


def _cpu_dry_run(rows: list[dict[str, Any]], policy: str, json_out: bool) -> None:
    """No GPU: the first level of candidates, compiled, ranked by the policy's priors."""
    # deferred: loaded when the command runs, not at `cuopt --help`
    from rich.table import Table

    from cuopt import ui

    if json_out:
        ui.print_json(rows)
        return
    table = Table(title=f"dry run without a GPU: first rewrites, ranked by the {policy} policy (nothing written)")
    for col in ("kernel", "id", "prior", "compiled", "regs", "smem", "summary"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["kernel"], r["id"], f"{r['prior']:.3f}", "yes" if r["compiled"] else f"no: {r.get('error')}",
                      str(r.get("registers", "-")), str(r.get("shared_bytes", "-")), r["summary"])
    ui.console().print(table)
