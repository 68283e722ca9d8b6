"""`cuopt optimize`: search rewrites on the GPU and write back the fastest confirmed variant."""
from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from cuopt.commands import compile_options
from cuopt.errors import CuoptError, NoGpuError


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
                      "(models/policy.pt) or a model file. Default: learned when that model is installed, "
                      "else heuristic.")] = None,
    fast_math: Annotated[bool, typer.Option("--fast-math", help="Allow rewrites that need fast-math.")] = False,
    threshold: Annotated[float, typer.Option(help="Required speedup over the measured spread (0.03 = 3%).")] = 0.03,
    sanitizer: Annotated[bool, typer.Option("--sanitizer/--no-sanitizer", help="Run compute-sanitizer on "
                                            "the result before writing it.")] = True,
    cache: Annotated[bool, typer.Option("--cache/--no-cache", help="Reuse measurements from earlier runs.")] = True,
    search_option: Annotated[Optional[list[str]], typer.Option("--search-option", help="KEY=VALUE: c-puct, "
                             "max-depth, batch, failure-penalty, fpu-reduction, value-weight.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds one launch may take before it counts as hung.")] = 10.0,
    diff: Annotated[bool, typer.Option("--diff/--no-diff", help="Show the diff in the summary.")] = True,
    include: compile_options.Include = None,
    define: compile_options.Define = None,
    nvcc_flag: compile_options.NvccFlag = None,
) -> None:
    """Search sequences of rewrites (MCTS), validate and time every candidate on the local GPU,
    confirm the best (fresh inputs, compute-sanitizer, interleaved re-timing) and write it back
    atomically (the original is kept under .cuopt/backups/)."""
    from cuopt import ui
    from cuopt.rewrite.engine import Engine
    from cuopt.search.budget import Budget, parse_duration
    from cuopt.search.mcts import SearchOptions
    from cuopt.targets import collect

    total = Budget(parse_duration(budget), None)
    search_opts = SearchOptions.from_pairs(search_option or [])
    if max_evals is not None and max_evals < 1:
        raise CuoptError("--max-evals must be at least 1")
    warnings: list[str] = []
    targets = collect(paths, kernel, warnings, compile_options.settings(include, define, nvcc_flag))
    for w in warnings:
        ui.warn(w)
    if out is not None and len(targets) != 1:
        raise CuoptError(f"--out needs exactly one kernel; found {len(targets)} (use --kernel)")
    engine = Engine.default()
    chosen_policy = _load_policy(policy, engine)
    options = frozenset({"fast-math"} if fast_math else set())

    from cuopt.evaluate.device import open_gpu

    try:
        client = open_gpu(timeout)
    except NoGpuError:
        if not dry_run:
            raise
        _cpu_dry_run(targets, engine, chosen_policy, options, keep_launch, json_out)
        return

    from cuopt.evaluate.device import peak_bandwidth
    from cuopt.optimization.report import render, summary, write_markdown
    from cuopt.optimization.session import Settings, optimize_kernel

    settings = Settings(chosen_policy, search_opts, seed, keep_launch, options, threshold, dry_run=dry_run, out=out,
                        sanitizer=sanitizer, use_cache=cache)
    console = ui.console()
    results = []
    previous = signal.getsignal(signal.SIGINT)
    current: list[Budget] = []

    def interrupt(signum: int, frame: Any) -> None:
        if current and not current[0].stopped:
            current[0].stopped = "interrupted (Ctrl-C); confirming the best so far"
            total.stopped = "interrupted"
            return
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
    try:
        peak = peak_bandwidth(client)
        for i, target in enumerate(targets):
            if total.stopped:
                break
            share = total.share(len(targets) - i)
            reserve = min(max(5.0, 0.3 * share), 60.0)  # confirmation, sanitizer, write-back
            kernel_budget = Budget(max(1.0, share - reserve), max_evals)
            current[:] = [kernel_budget]
            target = settings.files.current(target)
            with _Progress(console, f"{target.path.name}:{target.kernel.entry}", kernel_budget, json_out) as progress:
                result = optimize_kernel(target, client, engine, settings, kernel_budget, progress, peak)
            write_markdown(result)
            results.append(result)
            if not json_out:
                render(console, result, show_diff=diff)
    finally:
        signal.signal(signal.SIGINT, previous)
        client.close()
    if json_out:
        objs = [summary(r) for r in results]
        ui.print_json(objs[0] if len(objs) == 1 else objs)
    if any(r.status == "error" for r in results):
        raise typer.Exit(1)


def _load_policy(name: str | None, engine: Any) -> Any:
    """The policy asked for (default: learned if installed, else heuristic); a learned model that
    cannot be used gives one warning and the heuristic policy."""
    from cuopt import ui
    from cuopt.errors import ModelError
    from cuopt.search.policy import default_policy, learned_path, load_policy

    rule_priors = engine.priors
    chosen = name or default_policy()
    if name is None and chosen == "heuristic" and learned_path().is_file():
        ui.warn("the installed learned policy needs PyTorch (pip install torch); using the heuristic policy")
    try:
        return load_policy(chosen, rule_priors)
    except ModelError as exc:
        ui.warn(f"{exc}; using the heuristic policy")
        return load_policy("heuristic", rule_priors)


class _Progress:
    """A live line per kernel on a terminal; plain lines on new bests otherwise."""

    def __init__(self, console: Any, name: str, budget: Any, quiet: bool) -> None:
        self.console, self.name, self.budget, self.quiet = console, name, budget, quiet
        self.live: Any = None
        self.best = 1.0
        self.phase = ""

    def __enter__(self) -> _Progress:
        if not self.quiet and self.console.is_terminal:
            from rich.live import Live

            self.live = Live(self._line(None), console=self.console, refresh_per_second=4, transient=True)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def __call__(self, phase: str, search: Any) -> None:
        if self.live is not None:
            self.live.update(self._line(search, phase))
            return
        if self.quiet:
            return
        best = search.best(1)[0] if search is not None else None
        speedup = search.baseline_ms / best.measurement.ms if best is not None else 1.0
        if phase != self.phase or speedup > self.best * 1.001:
            self.phase, self.best = phase, max(self.best, speedup)
            self.console.print(self._text(search, phase), markup=False, highlight=False)

    def _text(self, search: Any, phase: str = "") -> str:
        b = self.budget
        head = f"{self.name} [{phase}] {b.elapsed:.0f}/{b.seconds:.0f}s"
        if search is None:
            return head
        best = search.best(1)[0]
        failures = sum(1 for n in search.nodes if n.measurement is not None and not n.measurement.ok)
        seq = " → ".join(best.sequence) or "original"
        return (f"{head}  evals {search.evaluations}  failures {failures}  "
                f"best {search.baseline_ms / best.measurement.ms:.2f}x  {seq}")

    def _line(self, search: Any, phase: str = "baseline") -> Any:
        from rich.text import Text

        return Text(self._text(search, phase))


def _cpu_dry_run(targets: list[Any], engine: Any, policy: Any, options: frozenset[str], keep_launch: bool,
                 json_out: bool) -> None:
    """No GPU: the first level of candidates, compiled, ranked by the policy's priors."""
    from rich.table import Table

    from cuopt import ui
    from cuopt.evaluate.build import compile_all, plan_for
    from cuopt.evaluate.compile import DEFAULT_ARCH, CompileError
    from cuopt.rewrite.context import Context

    out = []
    for t in targets:
        ctx = Context(t.source.source, t.spec.launch, t.kernel.entry, t.spec, options, t.source.macros, t.settings)
        offers = engine.offers(ctx, keep_launch=keep_launch)
        priors = policy.bind(t.spec, t.kernel.entry, options, None).priors(ctx, offers) if offers else []
        plan = plan_for(t)
        compiled = compile_all([(plan, o.result.source.decode()) for o in offers], DEFAULT_ARCH)
        for o, p, c in sorted(zip(offers, priors, compiled), key=lambda x: -x[1]):
            row = {"file": str(t.path), "kernel": t.kernel.entry, "id": o.action.id, "prior": round(p, 4),
                   "summary": o.result.summary, "compiled": not isinstance(c, CompileError)}
            if isinstance(c, CompileError):
                row["error"] = str(c)
            else:
                row.update(registers=c.resources.registers, shared_bytes=c.resources.shared_bytes,
                           spills=c.resources.spill_stores + c.resources.spill_loads)
            out.append(row)
    if json_out:
        ui.print_json(out)
        return
    table = Table(title=f"dry run without a GPU: first rewrites, ranked by the {policy.name} policy (nothing written)")
    for col in ("kernel", "id", "prior", "compiled", "regs", "smem", "summary"):
        table.add_column(col)
    for r in out:
        table.add_row(r["kernel"], r["id"], f"{r['prior']:.3f}", "yes" if r["compiled"] else f"no: {r.get('error')}",
                      str(r.get("registers", "-")), str(r.get("shared_bytes", "-")), r["summary"])
    ui.console().print(table)
