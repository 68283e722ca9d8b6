"""The driver of one `cuopt optimize` (or `train collect`) command: it turns kernels into jobs,
gives each its share of the budget (`schedule`), sends them to a runner (local GPUs or Ray), and
is the only one that writes files: sources and specs (atomically, read back), traces, reports and
measurement-cache rows. The kernels of one file run one after the other, each from the file as the
earlier ones left it; kernels of different files run at once, one per GPU."""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from cuopt.compile_settings import NO_SETTINGS, CompileSettings
from cuopt.optimization.environment import append_rows, cache_path, read_rows
from cuopt.optimization.files import Files, WriteCheckError
from cuopt.optimization.jobs import Job, Options
from cuopt.optimization.report import diff_text, write_markdown
from cuopt.optimization.result import KernelResult, KernelRun, kernel_result
from cuopt.optimization.runners import Runner
from cuopt.optimization.schedule import MIN_CANDIDATES, Equal, Schedule, first_round_s, minimum_s
from cuopt.optimization.session import launch_json
from cuopt.optimization.trace import write_trace
from cuopt.spec.edit import relocate, set_launch
from cuopt.spec.model import spec_path_for
from cuopt.targets import Target


@dataclass
class Plan:
    """What the command asks of every kernel."""

    seconds: float  # wall-clock budget of the whole command
    max_evals: int | None = None
    dry_run: bool = False  # confirm, write nothing
    out: Path | None = None
    confirm: bool = True  # False: search only (self-play data), nothing written but cache rows
    settings: CompileSettings = NO_SETTINGS  # the command line's compile settings
    splits: dict[str, str] | None = None  # self-play data: each kernel's corpus split (`train collect`)


@dataclass
class _Kernel:
    target: Target
    first: KernelRun | None = None  # its minimum round
    share: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.target.path}:{self.target.spec.name}"


class Driver:
    def __init__(self, targets: list[Target], options: Options, runner: Runner, schedule: Schedule, plan: Plan,
                 on_result: Callable[[KernelResult, KernelRun | None], None] = lambda r, run: None) -> None:
        self.kernels = [_Kernel(t) for t in targets]
        self.options, self.runner, self.plan = options, runner, plan
        self.schedule = schedule if plan.confirm else Equal()  # a search-only command has no minimum round
        self.on_result = on_result
        self.files = Files()
        self.start = time.monotonic()
        self.stopped = ""  # set on Ctrl-C: nothing more is started
        self.running: dict[Any, tuple[_Kernel, Job, float]] = {}  # handle -> kernel, job, start time
        self.results: dict[str, KernelResult] = {}
        self.spent = 0.0  # GPU-seconds that finished jobs took

    @property
    def remaining(self) -> float:
        return max(0.0, self.plan.seconds - (time.monotonic() - self.start))

    def capacity(self) -> float:
        """GPU-seconds left to hand out: every slot until the deadline less what running jobs still
        hold, and never more than the budget's GPU-seconds less what finished and running jobs took."""
        now = time.monotonic()
        held = sum(max(0.0, job.seconds - (now - t0)) for _, job, t0 in self.running.values())
        taken = self.spent + sum(job.seconds for _, job, _ in self.running.values())
        return max(0.0, min(self.runner.slots * self.remaining - held, self.runner.slots * self.plan.seconds - taken))

    def run(self) -> list[KernelResult]:
        """Every kernel's result, in the order the kernels were given."""
        if self.schedule.minimum_round:
            self._minimum_round()
        self._last_round()
        return [self.results[k.name] for k in self.kernels if k.name in self.results]

    # -- rounds -----------------------------------------------------------------------------
    def _minimum_round(self) -> None:
        """Every kernel's baseline and first candidates (no confirmation), all files at once."""
        waiting = list(self.kernels)
        while (waiting and not self.stopped) or self.running:
            while waiting and len(self.running) < self.runner.slots and not self.stopped:
                k = waiting.pop(0)
                cap = first_round_s(self.capacity(), len(waiting) + 1)
                evals = min(MIN_CANDIDATES, self.plan.max_evals or MIN_CANDIDATES)
                self._submit(k, self._job(k, cap, evals, confirm=False))
            for k, run in self._collect():
                k.first = run
                if run.status != "searched":  # the baseline failed: that is its result
                    self._commit(k, run)

    def _last_round(self) -> None:
        """Each kernel's search with its share, confirmation and write-back; a file's kernels in order."""
        chains: dict[Path, list[_Kernel]] = {}
        for k in self.kernels:
            if k.name not in self.results:
                chains.setdefault(k.target.path, []).append(k)
        busy: set[Path] = set()
        while (chains and not self.stopped) or self.running:
            for path in [p for p in chains if p not in busy]:
                if len(self.running) >= self.runner.slots or self.stopped:
                    break
                k = chains[path].pop(0)
                if not chains[path]:
                    del chains[path]
                share = self._share(k, [k, *(x for c in chains.values() for x in c)])
                if share.seconds <= 0:
                    self._skip(k, share.note or "the budget ran out before this kernel")
                    continue
                busy.add(path)
                k.target = self.files.current(k.target)
                self._submit(k, self._job(k, min(share.seconds, self.remaining), self.plan.max_evals,
                                          self.plan.confirm))
            for k, run in self._collect():
                busy.discard(k.target.path)
                self._commit(k, run)
        for k in (x for c in chains.values() for x in c):
            self._skip(k, f"not started: {self.stopped}")

    def _share(self, k: _Kernel, pending: list[_Kernel]) -> Any:
        """`k`'s share, computed over every kernel not started yet with the capacity left now."""
        probes = {p.name: p.first.probe if p.first is not None else None for p in pending}
        share = self.schedule.shares(probes, self.capacity())[k.name]
        probe = k.first.probe if k.first is not None else None
        k.share = {"share_s": round(share.seconds + (k.first.seconds if k.first else 0.0), 1),
                   "minimum_s": round(minimum_s(probe), 1) if probe is not None else None,
                   "note": share.note or self._first_note(k)}
        return share

    def _first_note(self, k: _Kernel) -> str:
        """Why a minimum round fell short, and what the kernel would need."""
        p = k.first.probe if k.first is not None else None
        if p is None or p.exhausted or p.evaluations >= MIN_CANDIDATES or self.plan.max_evals is not None:
            return ""
        return (f"the minimum round ran out of time after {p.evaluations} candidates: this kernel needs "
                f"about {minimum_s(p):.0f} s for its baseline and {MIN_CANDIDATES} candidates")

    # -- jobs -------------------------------------------------------------------------------
    def _job(self, k: _Kernel, seconds: float, max_evals: int | None, confirm: bool) -> Job:
        t = k.target
        rows = read_rows(cache_path(t.path, t.spec.name)) if self.options.use_cache else []
        shared = tuple(k.first.cache_rows) if k.first is not None else ()  # whatever --cache says
        collect = None if self.plan.splits is None else {
            "kernel": t.kernel.name, "file": str(t.path), "split": self.plan.splits.get(t.kernel.name, "train")}
        return Job(t.path, t.text, spec_path_for(t.path).read_text(), t.spec.name, seconds, max_evals, confirm,
                   self.plan.settings, tuple(r for r in rows if r not in shared), shared, collect)

    def _submit(self, k: _Kernel, job: Job) -> None:
        self.running[self.runner.submit("search", job)] = (k, job, time.monotonic())

    def _collect(self) -> list[tuple[_Kernel, KernelRun]]:
        if not self.running:
            return []
        out = []
        for handle, run in self.runner.finished():
            k = self.running.pop(handle)[0]
            self.spent += run.seconds
            if self.options.use_cache:
                append_rows(cache_path(k.target.path, k.target.spec.name), run.cache_rows)
            out.append((k, run))
        return out

    # -- results ----------------------------------------------------------------------------
    def _commit(self, k: _Kernel, run: KernelRun) -> None:
        """Write what `run` confirmed (unless a dry run), its trace and report; record its result."""
        t = k.target
        status, message, written = run.status, run.message, []
        if status == "confirmed" and run.final_launch is not None:
            if self.plan.dry_run:
                status, message = "dry-run", "confirmed; nothing written (--dry-run)"
            else:
                dest = self.plan.out or t.path
                spec_text = relocate(set_launch(spec_path_for(t.path).read_text(), t.spec.name, run.final_launch),
                                     t.path.parent, dest.parent)
                try:
                    written = self.files.write(t, dest, run.final_source.encode(), spec_text, run.final_launch)
                    status, message = "written", f"wrote {dest}"
                except WriteCheckError as exc:
                    status, message = "error", str(exc)
        summary = dict(run.summary)
        if status not in ("written", "dry-run") and "launch" in summary:
            summary["launch"] = launch_json(t.spec.launch, t.spec.sizes)
        trace = None
        if run.trace and self.plan.confirm:
            run.trace["result"] = {**run.trace.get("result", {}), "status": status, "message": message,
                                   "written": written}
            run.trace["budget"] = self._budget(k, run)
            trace = str(write_trace(t.path, t.spec.name, run.trace))
        shown = status in ("written", "dry-run")
        result = kernel_result({**summary, "status": status, "message": message, "written": written, "trace": trace},
                               budget=self._budget(k, run), gpu=run.gpu,
                               diff=diff_text(t.path.name, t.text, run.final_source) if shown else "",
                               accuracy_line=run.accuracy, confirmation=run.confirmation, sanitizer=run.sanitizer)
        if trace is not None:
            result = replace(result, report=str(write_markdown(result, t.spec.name)))
        self.results[k.name] = result
        self.on_result(result, run)

    def _budget(self, k: _Kernel, run: KernelRun) -> dict[str, Any]:
        used = run.seconds + (k.first.seconds if k.first is not None and run is not k.first else 0.0)
        return {**k.share, "used_s": round(used, 1)} if k.share else {"used_s": round(used, 1)}

    def _skip(self, k: _Kernel, why: str) -> None:
        t = k.target
        share = {**k.share, "note": why} if k.share else {"note": why}
        base = k.first.summary if k.first is not None else {"file": str(t.path), "kernel": t.kernel.entry}
        result = kernel_result({**base, "status": "skipped", "message": why, "written": [], "trace": None},
                               budget=share, gpu=k.first.gpu if k.first else "")
        self.results[k.name] = result
        self.on_result(result, k.first)

    def interrupt(self, why: str) -> None:
        self.stopped = why

