"""One kernel's search as a job that can run anywhere a GPU is: the file's and spec's contents,
the command's options and a time share travel with it (plain, picklable data), and a `KernelRun`
comes back. A job writes no file: the driver that sent it does (`cuopt.optimization.driver`)."""
from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from cuopt.compile_settings import NO_SETTINGS, CompileSettings
from cuopt.errors import CuoptError
from cuopt.evaluate.build import compile_all, plan_for
from cuopt.evaluate.client import WorkerClient
from cuopt.evaluate.compile import DEFAULT_ARCH, CompileError
from cuopt.evaluate.device import open_gpu, peak_bandwidth, peak_fp32_gflops, roofline_floor_ms
from cuopt.optimization.environment import MeasurementCache
from cuopt.optimization.report import accuracy_line, summary
from cuopt.optimization.result import KernelRun, Probe
from cuopt.optimization.schedule import confirm_reserve, schedule
from cuopt.optimization.session import Settings, context_hash, optimize_kernel
from cuopt.rewrite.context import Context
from cuopt.rewrite.engine import Engine
from cuopt.search.budget import Budget
from cuopt.search.mcts import MCTS, SearchOptions
from cuopt.search import policies
from cuopt.source.preprocess import Macros
from cuopt.spec import expr as E
from cuopt.spec.model import KernelSpec
from cuopt.targets import target_from_text

Progress = Callable[[str, Any], None]  # (phase, search or None)


class Collector(Protocol):
    """Self-play dataset rows of a finished search (`cuopt-train collect` passes its own; picklable,
    as a module's function is, since the options travel with every job)."""

    def __call__(self, search: MCTS, kernel: str, spec: KernelSpec, options: frozenset[str],
                 device: dict[str, Any], meta: dict[str, Any], macros: Macros) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class Options:
    """What every kernel's search of one command shares."""

    policy: str = "heuristic"  # a policy name or model file that loads (the driver checked it)
    search: SearchOptions = field(default_factory=SearchOptions)
    seed: int = 0
    keep_launch: bool = False
    options: frozenset[str] = frozenset()
    threshold: float = 0.03
    sanitizer: bool = True
    use_cache: bool = True  # reuse (and keep) measurements of earlier commands; this command's are always shared
    timeout: float = 10.0
    backend: str | None = None  # the GPU backend (None: $CUOPT_GPU_BACKEND or pycuda)
    schedule: str = "headroom"  # how the budget is spent (cuopt.optimization.schedule)
    collector: Collector | None = None  # self-play data: what turns a job's finished search into rows


@dataclass(frozen=True)
class Job:
    """One kernel's search: `seconds` of one GPU (confirmation included unless `confirm` is off)."""

    path: Path
    text: str  # the file's contents as the driver has them (earlier kernels' results included)
    spec_text: str
    table: str  # the spec table of the kernel
    seconds: float
    max_evals: int | None = None
    confirm: bool = True
    settings: CompileSettings = NO_SETTINGS  # the command line's compile settings
    cache_rows: tuple[dict[str, Any], ...] = ()  # earlier commands' measurements of this kernel
    min_evals: int = 0  # the share does not stop the search before this many evaluations...
    hard_seconds: float | None = None  # ...but this does (the command's deadline, confirmation kept)
    collect: dict[str, Any] | None = None  # self-play data: the rows' metadata (`cuopt-train collect`)

    @property
    def name(self) -> str:
        return f"{self.path}:{self.table}"


class Station:
    """One GPU and what the searches run on it reuse: its worker, the rewrite engine, the policy."""

    def __init__(self, device: int = 0, label: str = "", backend: str | None = None, timeout: float = 10.0) -> None:
        self.device, self.label = device, label or str(device)
        self.backend, self.timeout = backend, timeout
        self.client: WorkerClient | None = None
        self.peak_gbps: float | None = None

    def open(self) -> WorkerClient:
        if self.client is None:
            self.client = open_gpu(self.timeout, self.backend, self.device)
            self.peak_gbps = peak_bandwidth(self.client)
        return self.client

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None

    def run(self, job: Job, options: Options, progress: Progress = lambda *_: None,
            budgets: dict[int, Budget] | None = None, extend: Callable[[Probe], float] | None = None,
            lender: Any = None) -> KernelRun:
        """Search `job` on this GPU. `budgets` (the driver's) holds the running search's budget, so
        that Ctrl-C can stop it; `extend`, given what the search measured so far when its share runs
        out, answers how many more seconds it gets; `lender` (a `lanes.Lender`) lends idle GPUs for
        the search's candidates."""
        start = time.monotonic()
        target = target_from_text(job.path, job.text, job.spec_text, job.table, job.settings)
        client = self.open()
        engine, policy = default_engine(), cached_policy(options.policy)
        settings = Settings(policy, options.search, options.seed, options.keep_launch, options.options,
                            options.threshold, sanitizer=options.sanitizer, confirm=job.confirm)
        reserve = confirm_reserve(job.seconds) if job.confirm else 0.0
        budget = Budget(max(1.0, job.seconds - reserve), job.max_evals, min_evals=job.min_evals,
                        hard_seconds=None if job.hard_seconds is None else max(1.0, job.hard_seconds - reserve))
        live: list[Any] = []  # the search, once it reports

        def report(phase: str, search: Any) -> None:
            live[:] = [search] if search is not None else live
            progress(phase, search)

        floor = _floor_ms(target, self.peak_gbps, client.device or {})  # once: the hook runs per evaluation

        def now() -> Probe:
            return snapshot(live[0], time.monotonic() - start, floor)

        plan = schedule(options.schedule)
        budget.enough = lambda: plan.enough(now(), options.threshold) if live else ""
        if extend is not None:
            budget.extend = lambda: extend(now()) if live else 0.0
        cache = MeasurementCache(job.cache_rows, context_hash(target, client.device or {}))
        if budgets is not None:
            budgets[id(budget)] = budget
        try:
            result = optimize_kernel(target, client, engine, settings, budget, report, self.peak_gbps, cache, lender)
        finally:
            if budgets is not None:
                budgets.pop(id(budget), None)
        run = kernel_run(result, target, cache, self.label, time.monotonic() - start, floor)
        if job.collect is not None and options.collector is not None and result.search is not None:
            meta = {**job.collect, "gpu": (client.device or {}).get("name", "")}
            run.rows = options.collector(result.search, target.kernel.entry, target.spec, settings.options,
                                         client.device or {}, meta, target.source.macros)
        return run


def kernel_run(result: Any, target: Any, cache: Any, gpu: str, seconds: float, floor_ms: float | None) -> KernelRun:
    """The plain data of a session `Result` (its search and evaluator stay behind)."""
    conf = result.confirmation
    return KernelRun(
        target.path, target.spec.name, target.kernel.entry, result.status, result.message, summary(result),
        result.trace, result.final_source, result.final_launch, accuracy_line(result),
        [f"{' + '.join(a.sequence) or '-'}: {a.verdict}" for a in conf.attempts] if conf else [],
        conf.sanitizer if conf else "", list(cache.new_rows) if cache is not None else [],
        snapshot(result.search, seconds, floor_ms), gpu, seconds)


def snapshot(search: Any, seconds: float, floor_ms: float | None) -> Probe:
    """What a search (None: it never started) cost and found after `seconds`: the scheduler's inputs."""
    if search is None:
        return Probe(None, seconds, seconds / 2, 0, None, False, floor_ms)
    fresh = [n for n in search.nodes if n.evaluated_at is not None and "eval_s" in n.measurement.extra]
    spent = sum(n.measurement.extra.get("compile_s", 0.0) + n.measurement.extra["eval_s"] for n in fresh)
    setup = max(0.0, seconds - spent)
    best = search.best(1)[0]
    since = search.evaluations - (best.evaluated_at or 0)
    return Probe(search.baseline_ms, setup, spent / len(fresh) if fresh else max(setup / 2, 0.1), search.evaluations,
                 best.measurement.ms, search.root.exhausted, floor_ms, since)


def _floor_ms(target: Any, peak_gbps: float | None, device: dict[str, Any]) -> float | None:
    """The roofline floor of the kernel at its timing size, as `cuopt bench` gives it."""
    if not peak_gbps:
        return None
    inst = target.bound.instances()[0]
    flops = E.evaluate(target.spec.flops, inst.sizes) if target.spec.flops is not None else None
    floor = roofline_floor_ms(inst.bytes_moved(), flops, peak_gbps, peak_fp32_gflops(device))
    return floor[0] if floor is not None and floor[0] > 0 and math.isfinite(floor[0]) else None


@functools.lru_cache(maxsize=1)
def default_engine() -> Any:
    return Engine.default()


def cached_policy(name: str) -> Any:
    """The policy `name`, loaded once per process for as long as its model file is unchanged."""
    model = policies.learned_path() if name == "learned" else None if name in policies.POLICIES else Path(name)
    stamp = (str(model), model.stat().st_mtime_ns) if model is not None and model.is_file() else None
    return _load_policy(name, stamp)


@functools.lru_cache(maxsize=4)
def _load_policy(name: str, model: tuple[str, int] | None) -> Any:
    return policies.load_policy(name, default_engine().priors)


def first_rewrites(job: Job, options: Options) -> list[dict[str, Any]]:
    """Without a GPU: the first rewrites of the job's kernel, compiled, ranked by the policy's priors."""
    t = target_from_text(job.path, job.text, job.spec_text, job.table, job.settings)
    ctx = Context(t.source.source, t.spec.launch, t.kernel.entry, t.spec, options.options, t.source.macros,
                  t.settings)
    offers = default_engine().offers(ctx, keep_launch=options.keep_launch)
    policy = cached_policy(options.policy)
    priors = policy.bind(t.spec, t.kernel.entry, options.options, None).priors(ctx, offers) if offers else []
    compiled = compile_all([(plan_for(t), o.result.source.decode()) for o in offers], DEFAULT_ARCH)
    out = []
    for o, p, c in sorted(zip(offers, priors, compiled), key=lambda x: -x[1]):
        row = {"file": str(t.path), "kernel": t.kernel.entry, "id": o.action.id, "prior": round(p, 4),
               "summary": o.result.summary, "compiled": not isinstance(c, CompileError)}
        if isinstance(c, CompileError):
            row["error"] = str(c)
        else:
            row.update(registers=c.resources.registers, shared_bytes=c.resources.shared_bytes,
                       spills=c.resources.spill_stores + c.resources.spill_loads)
        out.append(row)
    return out


def nothing_compiles(rows: list[dict[str, Any]]) -> str | None:
    """The error for the first kernel of `first_rewrites` rows none of whose candidates compiles:
    its file and the first nvcc error; None when every kernel has one that compiles (or none)."""
    kernels: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        kernels.setdefault((r["file"], r["kernel"]), []).append(r)
    for (file, kernel), mine in kernels.items():
        if not any(r["compiled"] for r in mine):
            return f"{file}: kernel {kernel}: none of its {len(mine)} candidates compiles: {mine[0]['error']}"
    return None


def error_run(job: Job, message: str, gpu: str = "") -> KernelRun:
    """A job that could not run (a bad file that travelled, a worker lost twice)."""
    return KernelRun(job.path, job.table, job.table, "error", message,
                     {"file": str(job.path), "kernel": job.table, "status": "error", "message": message},
                     {}, gpu=gpu)


def run_guarded(station: Station, job: Job, options: Options, progress: Progress = lambda *_: None,
                budgets: dict[int, Budget] | None = None, extend: Callable[[Probe], float] | None = None,
                lender: Any = None) -> KernelRun:
    """`station.run`, with a CuoptError (bad input that travelled with the job) as the kernel's error."""
    try:
        return station.run(job, options, progress, budgets, extend, lender)
    except CuoptError as exc:
        return error_run(job, str(exc), station.label)
