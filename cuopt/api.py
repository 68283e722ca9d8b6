"""The Python API: what `cuopt optimize` and `cuopt bench` do, for programs (docs/api.md).

    import cuopt
    results = cuopt.optimize(["kernels/"], budget="10m", gpus="all")
    for r in results:
        print(r.file, r.kernel, r.status, r.speedup)

Errors in what is asked (a path, a spec, an option) raise `cuopt.errors.CuoptError` with a
one-line message; `NoGpuError` (a subclass) when no GPU can be used."""
from __future__ import annotations

import os
import signal
import threading
from dataclasses import replace
import warnings as _warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from cuopt.benchmark import measure
from cuopt.compile_settings import from_command_line
from cuopt.errors import CuoptError, ModelError, NoGpuError
from cuopt.evaluate.device import open_gpu
from cuopt.optimization.driver import Driver, Plan
from cuopt.optimization.jobs import Job, Options, default_engine, first_rewrites as rank
from cuopt.optimization.result import KernelResult, KernelRun
from cuopt.optimization.runners import LocalGpus, RayCluster, local_gpu_count, parse_gpus
from cuopt.optimization.schedule import schedule as pick_schedule
from cuopt.search.budget import parse_duration
from cuopt.search.mcts import SearchOptions
from cuopt.search.policies import default_policy, load_policy
from cuopt.spec.model import spec_path_for
from cuopt.targets import collect
from cuopt.writeback import check_destination

__all__ = ["KernelResult", "bench", "first_rewrites", "optimize"]

Warn = Callable[[str], None]


def _warn(message: str) -> None:
    _warnings.warn(message, stacklevel=3)


def optimize(paths: Sequence[str | Path], *, budget: str | float = "10m", kernel: str | None = None,
             max_evals: int | None = None, seed: int = 0, out: str | Path | None = None, dry_run: bool = False,
             keep_launch: bool = False, policy: str | None = None, fast_math: bool = False,
             threshold: float = 0.03, sanitizer: bool = True, cache: bool = True,
             search_options: Iterable[str] = (), timeout: float = 10.0, gpus: str = "all",
             ray: str | None = None, schedule: str = "headroom", include: Iterable[str | Path] = (),
             define: Iterable[str] = (), nvcc_flags: Iterable[str] = (),
             on_result: Callable[[KernelResult], None] | None = None,
             progress: Callable[[str, str, Any], None] | None = None, warn: Warn = _warn) -> list[KernelResult]:
    """Search rewrites of every kernel with a spec under `paths`, validate and time each candidate
    on the GPUs, confirm the best and write it back (unless `dry_run`). `budget` is wall-clock for
    the whole call (a duration such as "10m", or seconds), split between the kernels by `schedule`.
    `gpus`: "all" or indices such as "0,1"; `ray`: "local", "auto" or a cluster address, instead of
    this machine's GPUs. `on_result` gets each kernel's result as it is written (again when a resumed
    search writes a faster variant); `progress(kernel,
    phase, search)` the local searches' progress. Returns one result per kernel, in order."""
    total, max_evals = budget_seconds(budget), checked_max_evals(max_evals)
    chosen = pick_schedule(schedule)
    options, targets, settings = _prepare(paths, kernel, policy, fast_math, keep_launch, threshold, sanitizer, cache,
                                          search_options, timeout, seed, include, define, nvcc_flags, warn)
    options = replace(options, schedule=schedule)
    if out is not None and len(targets) != 1:
        raise CuoptError(f"--out needs exactly one kernel; found {len(targets)} (use --kernel)")
    if out is not None:
        check_destination(Path(out), "--out")
    plan = Plan(total, max_evals, dry_run, Path(out) if out is not None else None, True, settings)
    runner, budgets = runner_for(gpus, ray, options, progress)

    def report(result: KernelResult, run: KernelRun | None) -> None:
        if on_result is not None:
            on_result(result)

    driver = Driver(targets, options, runner, chosen, plan, report)
    try:
        with _interrupts(driver, budgets):
            return driver.run()
    finally:
        runner.close()


def first_rewrites(paths: Sequence[str | Path], *, kernel: str | None = None, keep_launch: bool = False,
                   policy: str | None = None, fast_math: bool = False, ray: str | None = None,
                   include: Iterable[str | Path] = (), define: Iterable[str] = (), nvcc_flags: Iterable[str] = (),
                   warn: Warn = _warn) -> list[dict[str, Any]]:
    """Without a GPU: each kernel's first rewrites, compiled, ranked by the policy's priors (what
    `cuopt optimize --dry-run` shows on a machine without a GPU). Nothing is written."""
    options, targets, settings = _prepare(paths, kernel, policy, fast_math, keep_launch, 0.03, False, False, (), 10.0,
                                          0, include, define, nvcc_flags, warn)
    jobs = [Job(t.path, t.text, spec_path_for(t.path).read_text(), t.spec.name, 0.0, settings=settings)
            for t in targets]
    if ray is None:
        return [row for job in jobs for row in rank(job, options)]
    cluster = RayCluster(ray, options)
    try:
        handles = [cluster.submit("rewrites", job) for job in jobs]
        done: dict[Any, Any] = {}
        while len(done) < len(handles):
            done.update(cluster.finished())
        return [row for h in handles for row in done[h]]
    finally:
        cluster.close()


def bench(paths: Sequence[str | Path], *, kernel: str | None = None, dry_run: bool = False, arch: str | None = None,
          timeout: float = 10.0, rewrites: bool = False, include: Iterable[str | Path] = (),
          define: Iterable[str] = (), nvcc_flags: Iterable[str] = (), warn: Warn = _warn) -> list[dict[str, Any]]:
    """Validate and time each kernel as its spec launches it: the rows of `cuopt bench --json`
    (GB/s, % of peak bandwidth, the roofline floor; with `rewrites`, every single rewrite too)."""
    found: list[str] = []
    targets = collect([Path(p) for p in paths], kernel, found,
                      from_command_line([Path(i) for i in include], list(define), list(nvcc_flags)))
    for w in found:
        warn(w)
    return measure(targets, dry_run=dry_run, arch=arch, timeout=timeout, rewrites=rewrites, warn=warn).rows


# -- helpers ------------------------------------------------------------------------------------
def budget_seconds(budget: str | float) -> float:
    if isinstance(budget, (int, float)):
        if budget <= 0:
            raise CuoptError(f"--budget {budget!r}: must be positive")
        return float(budget)
    return parse_duration(budget)


def checked_max_evals(max_evals: int | None) -> int | None:
    if max_evals is not None and max_evals < 1:
        raise CuoptError("--max-evals must be at least 1")
    return max_evals


def _prepare(paths: Sequence[str | Path], kernel: str | None, policy: str | None, fast_math: bool,
             keep_launch: bool, threshold: float, sanitizer: bool, cache: bool, search_options: Iterable[str],
             timeout: float, seed: int, include: Iterable[str | Path], define: Iterable[str],
             nvcc_flags: Iterable[str], warn: Warn) -> tuple[Any, list[Any], Any]:
    """The command's options, its kernels and its compile settings; warnings go to `warn`."""
    search = SearchOptions.from_pairs(list(search_options))
    settings = from_command_line([Path(i) for i in include], list(define), list(nvcc_flags))
    found: list[str] = []
    targets = collect([Path(p) for p in paths], kernel, found, settings)
    for w in found:
        warn(w)
    options = Options(resolve_policy(policy, warn), search, seed, keep_launch,
                      frozenset({"fast-math"} if fast_math else set()), threshold, sanitizer, cache, timeout,
                      os.environ.get("CUOPT_GPU_BACKEND"))
    return options, targets, settings


def resolve_policy(name: str | None, warn: Warn) -> str:
    """The policy that will load: the one asked for (default: learned if installed, else heuristic);
    a learned model that cannot be used gives one warning and the heuristic policy."""
    chosen = name or default_policy()
    try:
        load_policy(chosen, default_engine().priors)
    except ModelError as exc:
        warn(f"{exc}; using the heuristic policy")
        return "heuristic"
    return chosen


def runner_for(gpus: str, ray: str | None, options: Any, progress: Callable[[str, str, Any], None] | None) -> Any:
    """The local GPUs asked for, or a Ray cluster; NoGpuError when there is no GPU to search on."""
    budgets: dict[int, Any] = {}
    if ray is not None:
        cluster = RayCluster(ray, options, local_gpu_count(options) if ray == "local" else 0)
        if cluster.gpus == 0:
            cluster.close()
            raise NoGpuError(f"the Ray cluster ({ray}) has no GPU; use --dry-run to check specs and compile "
                             "without a GPU")
        return cluster, budgets
    count = local_gpu_count(options)
    if count == 0:
        open_gpu(options.timeout, options.backend).close()  # raises the NoGpuError that says why
    chosen = parse_gpus(gpus, count)

    def per_job(job: Any) -> Callable[[str, Any], None]:
        return (lambda phase, search: progress(job.name, phase, search)) if progress else (lambda *_: None)

    return LocalGpus(chosen, options, per_job, budgets), budgets


class _interrupts:
    """Ctrl-C stops the running searches (each confirms its best so far) and starts no new one;
    a second Ctrl-C raises KeyboardInterrupt. Only in the main thread."""

    def __init__(self, driver: Any, budgets: dict[int, Any]) -> None:
        self.driver, self.budgets = driver, budgets
        self.previous: Any = None

    def __enter__(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handle)

    def __exit__(self, *exc: Any) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)

    def _handle(self, signum: int, frame: Any) -> None:
        if self.driver.stopped:
            raise KeyboardInterrupt
        self.driver.interrupt("interrupted")
        for b in list(self.budgets.values()):
            b.stopped = "interrupted (Ctrl-C); confirming the best so far"
