"""The search environment on a real GPU: rewrites from the engine, measurements from the
evaluator (compiles run in parallel on the CPU while the GPU runs the ones already built), and
a measurement cache under `.cuopt/` that a second run reuses (or measurements shared by the
searches of one `cuopt-train evaluate` run). A variant whose cubin and launch are those of a
variant the search already has (a rewrite the compiler undoes, such as unrolling a loop it
unrolls anyway) is not run: it gets that measurement, marked `same_binary_as`, and the search
does not count it as an evaluation."""
from __future__ import annotations

import hashlib
import json
import os
import queue
import re
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Iterable, Protocol, Sequence

from cuopt.evaluate.compile import CompileError
from cuopt.evaluate.accuracy import worst
from cuopt.evaluate.evaluator import KernelEvaluator, Variant
from cuopt.optimization.lanes import Lane, Lanes, Lender
from cuopt.rewrite.context import Context
from cuopt.rewrite.engine import Engine
from cuopt.search.budget import Budget
from cuopt.search.mcts import Measurement
from cuopt.source.preprocess import NO_MACROS, Macros

_COMMENTS = re.compile(rb"//[^\n]*|/\*.*?\*/", re.DOTALL)


def variant_key(variant: Variant) -> str:
    """Identity of a variant: source without comments and with whitespace folded, plus launch."""
    folded = b" ".join(_COMMENTS.sub(b" ", variant.source.encode()).split())
    return hashlib.sha256(folded + b"\0" + variant.launch.describe().encode()).hexdigest()[:24]


def binary_key(compiled: Any, variant: Variant) -> str:
    """Identity of what the GPU runs: the cubins' bytes (one per size set when sizes are macros),
    the entry symbol and the launch."""
    digest = hashlib.sha256()
    for build in compiled.sized or (compiled,):
        digest.update(Path(build.cubin).read_bytes())
    digest.update(b"\0" + compiled.symbol.encode() + b"\0" + variant.launch.describe().encode())
    return digest.hexdigest()[:24]


def resources(outcome: Any) -> dict[str, int]:
    """ptxas figures of an evaluated variant, as measurements record them (empty when unknown)."""
    r = outcome.resources
    if r is None:
        return {}
    return {"registers": r.registers, "shared_bytes": r.shared_bytes, "spills": r.spill_stores + r.spill_loads}


def recorded_resources(m: Measurement | None) -> dict[str, int] | None:
    """The ptxas figures recorded with a measurement; None when it has none."""
    extra = m.extra if m is not None else {}
    keys = ("registers", "shared_bytes", "spills")
    return {k: int(extra[k]) for k in keys} if all(k in extra for k in keys) else None


SAME_BINARY = "same_binary_as"  # extra key: the variant key whose measurement a binary twin reuses


def _same_binary(key: str, m: Measurement) -> Measurement:
    """`m` for a variant whose binary and launch are those of variant `key`."""
    extra = {k: v for k, v in m.extra.items() if k not in ("cached", "shared", SAME_BINARY)}
    return Measurement(m.status, m.ms, m.spread, m.detail, {**extra, SAME_BINARY: key})


class MeasurementCache:
    """Measurements by variant key, valid for one context (spec, device, timing settings), from the
    rows of a cache file (`cache_path`). What it measures anew is kept in `new_rows`, for whoever
    writes files to append (`append_rows`): a search on a GPU worker writes nothing itself."""

    def __init__(self, rows: Iterable[dict[str, Any]], context: str) -> None:
        self.context = context
        self.entries: dict[str, Measurement] = {}
        self.new_rows: list[dict[str, Any]] = []
        for row in rows:
            if row.get("context") == context:
                self.entries[row["key"]] = Measurement(row["status"], row.get("ms"), row.get("spread", 0.0),
                                                       row.get("detail", ""), dict(row.get("extra", {})))

    def get(self, key: str) -> Measurement | None:
        m = self.entries.get(key)
        if m is None:
            return None
        return Measurement(m.status, m.ms, m.spread, m.detail, {**m.extra, "cached": True})

    def put(self, key: str, m: Measurement) -> None:
        self.entries[key] = m
        self.new_rows.append({"context": self.context, "key": key, "status": m.status, "ms": m.ms,
                              "spread": m.spread, "detail": m.detail,
                              "extra": {k: v for k, v in m.extra.items() if k != "cached"}})


def cache_path(cu_path: Path, table: str) -> Path:
    """The measurement cache of one kernel (spec table) of a file: `.cuopt/cache/<file>.<table>.jsonl`."""
    return cu_path.parent / ".cuopt" / "cache" / f"{cu_path.name}.{table}.jsonl"


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a cache file (none when it does not exist; unreadable lines are skipped)."""
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def append_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


class SharedMeasurements:
    """Measurements by variant key, in memory, shared by several searches of one kernel: a variant
    an earlier search measured is not measured again, yet it still counts as an evaluation of the
    search that asks for it (unlike the cache's, which is marked `cached`). The searches of
    `cuopt-train evaluate` see one timing per variant, and the GPU measures each variant once."""

    def __init__(self) -> None:
        self.entries: dict[str, Measurement] = {}

    def get(self, key: str) -> Measurement | None:
        m = self.entries.get(key)
        return None if m is None else Measurement(m.status, m.ms, m.spread, m.detail, {**m.extra, "shared": True})

    def put(self, key: str, m: Measurement) -> None:
        self.entries[key] = m


class Measurements(Protocol):
    """Where the environment looks a variant up before measuring it, and records what it measured."""

    def get(self, key: str) -> Measurement | None: ...

    def put(self, key: str, m: Measurement) -> None: ...


class GpuEnvironment:
    def __init__(self, evaluator: KernelEvaluator, engine: Engine, spec: Any, options: frozenset[str],
                 keep_launch: bool, cache: Measurements | None, workers: int | None = None,
                 macros: Macros = NO_MACROS, lender: Lender | None = None) -> None:
        self.evaluator = evaluator
        self.engine = engine
        self.spec = spec
        self.options = options
        self.keep_launch = keep_launch
        self.cache = cache
        self.macros = macros  # the original file's: variants are analysed through them
        self.pool = ThreadPoolExecutor(max_workers=workers or max(1, os.cpu_count() or 1))
        self.compiled: dict[str, Any] = {}  # variant key -> Compiled, for confirmation
        self.binaries: dict[str, tuple[str, Measurement]] = {}  # binary key -> (variant key, measurement)
        self.measuring: set[str] = set()  # binary keys a GPU is measuring now
        self.lanes = Lanes(evaluator, lender)
        self.lock = threading.RLock()  # the bookkeeping above, and the budget, when several GPUs measure

    def remember(self, state: Variant, compiled: Any, m: Measurement) -> None:
        """A variant measured outside `evaluate` (the original): later variants of the same binary reuse it."""
        self.compiled[self.key(state)] = compiled
        m.extra.setdefault("binary", binary_key(compiled, state))
        self.binaries.setdefault(m.extra["binary"], (self.key(state), m))
        if m.ms is not None:
            self.lanes.set_original(state, compiled, m.ms)

    def key(self, state: Variant) -> str:
        return variant_key(state)

    def expand(self, state: Variant, history: list[str]) -> list[tuple[Any, Variant]]:
        """The engine's rewrites, less rules marked `once` that the sequence already used."""
        ctx = Context(state.source.encode(), state.launch, self.evaluator.bound.kernel_name, self.spec, self.options,
                      self.macros, self.evaluator.settings)
        done = {r for r in history if self.engine.rules[r].once}
        only = {r for r in self.engine.rules if r not in done}
        offers = self.engine.offers(ctx, only=only, keep_launch=self.keep_launch)
        return [(o, Variant(o.result.source.decode(), o.result.launch)) for o in offers]

    def evaluate(self, states: Sequence[Variant], budget: Budget) -> list[Measurement | None]:
        """Measure a batch: compiles run in parallel; each compiled variant goes to whichever GPU of
        the search is free (its own, in this thread, and any idle GPU it could borrow)."""
        results: list[Measurement | None] = [None] * len(states)
        futures: dict[Future, int] = {}
        for i, st in enumerate(states):
            cached = self.cache.get(self.key(st)) if self.cache is not None else None
            if cached is not None:
                results[i] = self._known(st, cached)
            else:
                futures[self.pool.submit(self._compile, st)] = i
        stations = self.lanes.borrow() if len(futures) > 1 else []
        try:
            if stations:
                self._spread(futures, states, results, budget, stations)
            else:
                for fut in as_completed(futures):
                    self._take(futures[fut], fut, states, results, budget, self.lanes.own)
        finally:
            self.lanes.give_back()
        return results

    def _spread(self, futures: dict[Future, int], states: Sequence[Variant], results: list[Measurement | None],
                budget: Budget, stations: list[Any]) -> None:
        """Measure the batch on this search's GPU and the borrowed `stations` at once: each GPU takes
        the next variant whose compile finished. Variants with the binary of one being measured wait
        for its measurement."""
        feed: queue.Queue[tuple[int, Future]] = queue.Queue()
        for fut, i in futures.items():
            fut.add_done_callback(lambda f, i=i: feed.put((i, f)))
        left = [len(futures)]
        waiting: list[tuple[int, str]] = []

        def serve(lane: Lane | None) -> None:
            while lane is not None:
                with self.lock:
                    if left[0] == 0:
                        return
                    left[0] -= 1
                i, fut = feed.get()
                twin_of = self._take(i, fut, states, results, budget, lane)
                if twin_of is not None:
                    with self.lock:
                        waiting.append((i, twin_of))

        def helper(station: Any) -> None:
            try:
                serve(self.lanes.lane(station))
            except Exception as exc:  # a bug on a borrowed GPU loses its variant, not the search
                self.lanes.notes.append(f"GPU {station.label}: {type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=helper, args=(s,), daemon=True, name=f"cuopt-lane-{s.label}")
                   for s in stations]
        for t in threads:
            t.start()
        try:
            serve(self.lanes.own)
        finally:
            with self.lock:
                left[0] = 0  # on an interrupt: the borrowed GPUs finish what they measure, then stop
            for t in threads:
                t.join()
        for i, binary in waiting:
            twin = self.binaries.get(binary)
            if twin is not None:
                results[i] = self._record(states[i], _same_binary(*twin), None)

    def _take(self, i: int, fut: Future, states: Sequence[Variant], results: list[Measurement | None],
              budget: Budget, lane: Lane) -> str | None:
        """Measure variant `i` (its compile done) on `lane` unless the budget is spent; the binary
        key when another GPU is measuring the same binary (the variant then waits for it)."""
        with self.lock:
            if budget.exhausted():
                return None
        compiled, compile_s = fut.result()
        state = states[i]
        binary = None if isinstance(compiled, CompileError) else binary_key(compiled, state)
        with self.lock:
            if binary is not None:
                self.compiled[self.key(state)] = compiled
            twin = self.binaries.get(binary) if binary is not None else None
            if twin is None and binary is not None:
                if binary in self.measuring:
                    return binary
                self.measuring.add(binary)
        if twin is not None:
            m = _same_binary(*twin)
        else:
            m = self._measure(lane, state, compiled, compile_s)
        with self.lock:
            results[i] = self._record(state, m, binary)
            self.measuring.discard(binary)
        return None

    def _record(self, state: Variant, m: Measurement, binary: str | None) -> Measurement:
        """Keep a new measurement: the binary it belongs to (when measured, not a twin's) and the cache."""
        if binary is not None and SAME_BINARY not in m.extra:
            m.extra["binary"] = binary
            self.binaries.setdefault(binary, (self.key(state), m))
        if self.cache is not None:
            self.cache.put(self.key(state), m)
        return m

    def _measure(self, lane: Lane, state: Variant, compiled: Any, compile_s: float) -> Measurement:
        """Validate and time one compiled variant on `lane`'s GPU (a compile error, without a binary, as it is)."""
        start = time.monotonic()
        outcome = lane.measure(state, compiled)
        extra: dict[str, Any] = {"compile_s": round(compile_s, 3), "eval_s": round(time.monotonic() - start, 3)}
        if lane.label:
            extra["gpu"] = lane.label
        extra.update(resources(outcome))
        if outcome.comparisons:
            extra["max_abs_err"] = max(c.max_abs for c in outcome.comparisons)
            vs64 = worst([c.accuracy for c in outcome.comparisons if c.accuracy is not None])
            if vs64 is not None:
                extra["error_vs_float64"] = vs64
        t = outcome.timing
        return Measurement(outcome.status, t.median_ms if t else None, t.spread if t else 0.0, outcome.detail, extra)

    def _known(self, state: Variant, m: Measurement) -> Measurement:
        """A measurement from the cache or another search, judged against this search's binaries:
        a twin of one this search has is free; otherwise it counts as the cache or sharing says."""
        extra = {k: v for k, v in m.extra.items() if k != SAME_BINARY}
        m = Measurement(m.status, m.ms, m.spread, m.detail, extra)
        binary = extra.get("binary")
        if binary is None:
            return m
        twin = self.binaries.get(binary)
        if twin is not None and twin[0] != self.key(state):
            return _same_binary(*twin)
        self.binaries.setdefault(binary, (self.key(state), m))
        return m

    def _compile(self, state: Variant) -> tuple[Any, float]:
        start = time.monotonic()
        try:
            return self.evaluator.compile(state), time.monotonic() - start
        except CompileError as exc:
            return exc, time.monotonic() - start

    def compiled_for(self, state: Variant) -> Any:
        """The cubin of an evaluated variant (compiled again from the disk cache if needed)."""
        key = self.key(state)
        if key not in self.compiled:
            self.compiled[key] = self.evaluator.compile(state)
        return self.compiled[key]

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.lanes.close()
