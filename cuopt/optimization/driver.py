"""The driver of one `cuopt optimize` (or `cuopt-train collect`) command: it turns kernels into jobs,
gives each its share of the budget (`schedule`), sends them to a runner (local GPUs or Ray), and
is the only one that writes files: sources and specs (atomically, read back), traces, reports and
measurement-cache rows. The kernels of one file run one after the other, each from the file as the
earlier ones left it; kernels of different files run at once, one per GPU, the lightest files
first (when the budget cannot cover every kernel's minimum, the heaviest are the ones left short).
When every kernel has had its turn, the time left goes to searches that their share stopped while
they still expected a gain (`Schedule.resume`): each resumes from the file as it was when it
started, its earlier candidates coming from the measurement cache, and what it confirms is
written only when it beats what the kernel's first search wrote."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from cuopt.compile_settings import NO_SETTINGS, CompileSettings
from cuopt.optimization.environment import append_rows, cache_path, read_rows
from cuopt.optimization.files import Files, WriteCheckError
from cuopt.optimization.jobs import Job, Options
from cuopt.optimization.report import diff_text, write_markdown
from cuopt.optimization.result import KernelResult, KernelRun, Probe, kernel_result
from cuopt.optimization.runners import Runner
from cuopt.optimization.schedule import MIN_CANDIDATES, MIN_EXTENSION_S, Schedule, confirm_reserve, minimum_s
from cuopt.optimization.session import launch_json
from cuopt.optimization.trace import add_resume, write_trace
from cuopt.search.mcts import TIME_STOP
from cuopt.spec import expr as E
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
    splits: dict[str, str] | None = None  # self-play data: each kernel's corpus split (`cuopt-train collect`)


def work(target: Target) -> float:
    """A kernel's work at its timing size, known before it runs: bytes moved plus FLOPs (the spec's)."""
    inst = target.bound.instances()[0]
    flops = E.evaluate(target.spec.flops, inst.sizes) if target.spec.flops is not None else 0.0
    return float(inst.bytes_moved() + flops)


@dataclass
class _Kernel:
    target: Target
    share: dict[str, Any] = field(default_factory=dict)
    job: Job | None = None  # its first search
    first: KernelRun | None = None  # what that search gave
    left: bytes | None = None  # its destination file as the first search left it
    used_s: float = 0.0  # seconds its searches took
    resume_s: float = 0.0  # seconds the schedule gives it to resume its search

    @property
    def name(self) -> str:
        return f"{self.target.path}:{self.target.spec.name}"


@dataclass
class _Running:
    kernel: _Kernel
    job: Job
    start: float
    extra: float = 0.0  # seconds given on top of the job's share


class Driver:
    def __init__(self, targets: list[Target], options: Options, runner: Runner, schedule: Schedule, plan: Plan,
                 on_result: Callable[[KernelResult, KernelRun | None], None] = lambda r, run: None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.kernels = [_Kernel(t) for t in targets]
        self.clock = clock
        self.options, self.runner, self.schedule, self.plan = options, runner, schedule, plan
        self.on_result = on_result
        self.files = Files()
        self.start = clock()
        self.stopped = ""  # set on Ctrl-C: nothing more is started
        self.running: dict[Any, _Running] = {}
        self.results: dict[str, KernelResult] = {}
        self.spent = 0.0  # GPU-seconds that finished jobs took
        self.probes: list[Probe] = []  # what finished searches measured
        self.waiting = 0  # kernels not started yet
        self.lock = threading.RLock()  # extensions are asked for from the GPU threads

    @property
    def remaining(self) -> float:
        return max(0.0, self.plan.seconds - (self.clock() - self.start))

    def capacity(self) -> float:
        """GPU-seconds left to hand out: every slot until the deadline less what running jobs still
        hold, and never more than the budget's GPU-seconds less what finished and running jobs took."""
        now = self.clock()
        held = sum(max(0.0, r.job.seconds + r.extra - (now - r.start)) for r in self.running.values())
        taken = self.spent + sum(r.job.seconds + r.extra for r in self.running.values())
        return max(0.0, min(self.runner.slots * self.remaining - held, self.runner.slots * self.plan.seconds - taken))

    def run(self) -> list[KernelResult]:
        """Every kernel's result, in the order the kernels were given. The kernels of one file run in
        order, each from the file as the ones before it left it; files run at once, a GPU each. Then
        the searches the schedule resumes, one file at a time."""
        chains: dict[Path, list[_Kernel]] = {}
        for k in sorted(self.kernels, key=lambda k: work(k.target)):  # the lightest files first
            chains.setdefault(k.target.path, []).append(k)
        for path in chains:  # a file's own kernels in file order
            chains[path].sort(key=self.kernels.index)
        self.waiting = len(self.kernels)
        self._drain(chains, self._first_job)
        for k in (x for c in chains.values() for x in c):
            self._skip(k, f"not started: {self.stopped}")
        if not self.stopped:
            self._drain(self._resumable(), self._resumed_job)
        return [self.results[k.name] for k in self.kernels if k.name in self.results]

    def _drain(self, chains: dict[Path, list[_Kernel]], start: Callable[[_Kernel], Job | None]) -> None:
        """Run the chains' kernels until none is left (or Ctrl-C): one job per file at a time, as many
        at once as the runner has slots; `start` makes a kernel's job (None: it does not run)."""
        busy: set[Path] = set()
        while (chains and not self.stopped) or self.running:
            for path in [p for p in chains if p not in busy]:
                with self.lock:
                    if len(self.running) >= self.runner.slots or self.stopped:
                        break
                    k = chains[path].pop(0)
                    if not chains[path]:
                        del chains[path]
                    job = start(k)
                    if job is None:
                        continue
                    busy.add(path)
                    handle = self.runner.submit("search", job, lambda probe, k=k: self._extend(k, probe))
                    self.running[handle] = _Running(k, job, self.clock())
            for k, run in self._collect():
                busy.discard(k.target.path)
                if k.first is None:
                    k.first = run
                    self._commit(k, run)
                    k.left = self._destination(k)
                else:
                    self._settle(k, run)

    def _first_job(self, k: _Kernel) -> Job | None:
        seconds = min(self.schedule.share(self.capacity(), self.waiting), self.remaining)
        self.waiting -= 1
        if seconds < 1.0:
            self._skip(k, "the budget ran out before this kernel" + self._needs())
            return None
        k.target = self.files.current(k.target)
        k.share = {"share_s": round(seconds, 1)}
        k.job = self._job(k, seconds)
        return k.job

    # -- resumed searches -------------------------------------------------------------------
    def _resumable(self) -> dict[Path, list[_Kernel]]:
        """The kernels whose share stopped their search while it still expected a gain, with the
        seconds the schedule gives each to resume, by file (the most promising first)."""
        probes = {k.name: k.first.probe for k in self.kernels if k.first is not None and k.first.probe is not None
                  and k.first.summary.get("stop") == TIME_STOP and k.first.probe.baseline_ms is not None}
        if not probes or self.plan.max_evals is not None:
            return {}
        seconds = self.schedule.resume(probes, self.capacity(), self.options.threshold)
        by_name = {k.name: k for k in self.kernels}
        chains: dict[Path, list[_Kernel]] = {}
        for name in sorted(seconds, key=lambda n: -seconds[n]):
            k = by_name[name]
            k.resume_s = seconds[name]
            chains.setdefault(k.target.path, []).append(k)
        return chains

    def _resumed_job(self, k: _Kernel) -> Job | None:
        """`k`'s first job again, with its resumed seconds and what its first search measured, unless
        its file changed since that search (a later kernel of the file was written)."""
        assert k.job is not None and k.first is not None, "only a kernel that searched resumes"
        seconds = min(k.resume_s, self.remaining)
        if self._destination(k) != k.left or seconds < MIN_EXTENSION_S:
            return None
        k.share["resumed_s"] = round(seconds, 1)
        return replace(k.job, seconds=seconds, cache_rows=k.job.cache_rows + tuple(k.first.cache_rows),
                       hard_seconds=self.remaining)

    def _settle(self, k: _Kernel, run: KernelRun) -> None:
        """A resumed search's result: written when it confirmed a faster variant than the first search
        did (by the confirmation threshold, each speedup against its own interleaved baseline);
        otherwise the first result stands, with the resumed seconds in its budget and the resumed search
        in its trace."""
        assert k.first is not None, "only a kernel that searched resumes"
        first = self.results[k.name]
        better = run.status == "confirmed" and run.final_source != k.first.final_source and (
            first.status not in ("written", "dry-run")
            or (run.summary.get("speedup") or 0.0) > (first.speedup or 0.0) * (1.0 + self.options.threshold))
        if better:
            self._commit(k, run)
            return
        outcome = "no faster variant confirmed"
        budget = {**first.budget, "resumed_s": k.share.get("resumed_s", 0.0), "used_s": round(k.used_s, 1),
                  "resume": outcome}
        if first.trace and run.trace and Path(first.trace).is_file():
            add_resume(Path(first.trace), run.trace, budget["resumed_s"], outcome, budget)
        self.results[k.name] = replace(first, budget=budget)

    def _destination(self, k: _Kernel) -> bytes | None:
        """What `k`'s destination file holds now (None: no such file)."""
        dest = self.plan.out or k.target.path
        return dest.read_bytes() if dest.is_file() else None

    def _extend(self, k: _Kernel, probe: Probe) -> float:
        """More seconds for `k`'s running search, whose share ran out (from its GPU thread)."""
        with self.lock:
            mine = next((r for r in self.running.values() if r.kernel is k), None)
            if mine is None or self.stopped:
                return 0.0
            own = max(0.0, mine.job.seconds + mine.extra - (self.clock() - mine.start))
            more = self.schedule.extension(probe, self._typical(), self.waiting, self.capacity() + own, mine.job.seconds)
            more = min(more, max(0.0, self.remaining - confirm_reserve(mine.job.seconds + mine.extra + more)))
            if more < max(MIN_EXTENSION_S, 2 * probe.eval_s):  # what is left before the deadline is too little
                return 0.0
            mine.extra += more
            k.share["extended_s"] = round(k.share.get("extended_s", 0.0) + more, 1)
            return more

    def _typical(self) -> Probe | None:
        """The median cost of the searches finished so far."""
        done = [p for p in self.probes if p.baseline_ms is not None]
        if not done:
            return None
        mid = len(done) // 2
        setup = sorted(p.setup_s for p in done)[mid]
        each = sorted(p.eval_s for p in done)[mid]
        return Probe(None, setup, each, 0, None, False, None)

    def _needs(self) -> str:
        typical = self._typical()
        return f" (a typical kernel here needs about {minimum_s(typical):.0f} s)" if typical is not None else ""

    def _note(self, run: KernelRun) -> str:
        """Why a search fell short of the minimum, and what it would need."""
        p = run.probe
        if p is None or p.baseline_ms is None or p.exhausted or p.evaluations >= MIN_CANDIDATES \
                or self.plan.max_evals is not None or self.stopped:
            return ""
        return (f"the budget ran out after {p.evaluations} candidates: this kernel needs about "
                f"{minimum_s(p):.0f} s for its baseline and {MIN_CANDIDATES} candidates")

    # -- jobs -------------------------------------------------------------------------------
    def _job(self, k: _Kernel, seconds: float) -> Job:
        t = k.target
        rows = read_rows(cache_path(t.path, t.spec.name)) if self.options.use_cache else []
        collect = None if self.plan.splits is None else {
            "kernel": t.kernel.name, "file": str(t.path), "split": self.plan.splits.get(t.kernel.name, "train")}
        return Job(t.path, t.text, spec_path_for(t.path).read_text(), t.spec.name, seconds, self.plan.max_evals,
                   self.plan.confirm, self.plan.settings, tuple(rows), self.schedule.min_evals, self.remaining, collect)

    def _collect(self) -> list[tuple[_Kernel, KernelRun]]:
        if not self.running:
            return []
        out = []
        for handle, run in self.runner.finished():
            with self.lock:
                k = self.running.pop(handle).kernel
                k.used_s += run.seconds
                self.spent += run.seconds
                if run.probe is not None:
                    self.probes.append(run.probe)
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
        note = self._note(run)
        if note:
            k.share["note"] = note
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
        budget = {**k.share, "used_s": round(k.used_s, 1)}
        if run.probe is not None and run.probe.baseline_ms is not None:
            budget["minimum_s"] = round(minimum_s(run.probe), 1)
        if run.trace.get("phases"):
            budget["phases"] = run.trace["phases"]
        return budget

    def _skip(self, k: _Kernel, why: str) -> None:
        t = k.target
        result = kernel_result({"file": str(t.path), "kernel": t.kernel.entry, "status": "skipped", "message": why,
                                "launch": launch_json(t.spec.launch, t.spec.sizes)}, budget={"share_s": 0.0, "note": why})
        self.results[k.name] = result
        self.on_result(result, None)

    def interrupt(self, why: str) -> None:
        self.stopped = why
