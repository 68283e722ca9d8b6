"""Where jobs run: the local GPUs (one worker thread and one GPU worker process per GPU) or a Ray
cluster (one Ray task per job, with `num_gpus=1` for a search and 0 for a dry run's rewrites).
Both behind one Protocol; the driver submits jobs and takes back what finished, in any order."""
from __future__ import annotations

import os
import queue
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Callable, Protocol

from cuopt.errors import CuoptError, NoGpuError
from cuopt.evaluate.device import open_gpu
from cuopt.optimization.jobs import Job, Options, Progress, Station, error_run, first_rewrites, run_guarded
from cuopt.optimization.result import Probe
from cuopt.search.budget import Budget

RAY_HINT = "pip install 'cuopt[ray]'"


class Runner(Protocol):
    slots: int  # jobs that run at once: the GPUs

    def submit(self, task: str, job: Job, extend: Callable[[Probe], float] | None = None) -> Any:
        """Start `task` ("search" or "rewrites") on `job`; returns a handle. `extend` answers a search
        whose share ran out (a runner that cannot reach a running search ignores it)."""
        ...

    def finished(self) -> list[tuple[Any, Any]]:
        """Wait until at least one submitted job is done; (handle, what it returned) for each done."""
        ...

    def close(self) -> None: ...


def parse_gpus(text: str, count: int) -> list[int]:
    """`all` or comma-separated GPU indices, each below `count`."""
    if text.strip() == "all":
        return list(range(count))
    try:
        chosen = [int(x) for x in text.split(",")]
    except ValueError:
        raise CuoptError(f"--gpus {text!r}: expected `all` or comma-separated GPU indices such as 0,1") from None
    if len(set(chosen)) != len(chosen):
        raise CuoptError(f"--gpus {text!r}: a GPU is named twice")
    bad = [g for g in chosen if not 0 <= g < count]
    if bad:
        raise CuoptError(f"--gpus {text!r}: no GPU {bad[0]} here (this machine has {count}: 0-{count - 1})")
    return chosen


def local_gpu_count(options: Options) -> int:
    """How many GPUs this machine's backend sees (0 without one)."""
    try:
        client = open_gpu(options.timeout, options.backend)
    except NoGpuError:
        return 0
    try:
        return int((client.device or {}).get("count", 1))
    finally:
        client.close()


class LocalGpus:
    """One thread per GPU of this machine; a search takes whichever GPU is free, and lends itself
    the GPUs no waiting search needs, a batch of candidates at a time (`lanes.Lender`)."""

    def __init__(self, gpus: list[int], options: Options, progress: Callable[[Job], Progress] | None = None,
                 budgets: dict[int, Budget] | None = None) -> None:
        self.options = options
        self.slots = max(1, len(gpus))
        self.progress = progress or (lambda job: lambda *_: None)
        self.budgets = budgets
        self.stations: queue.Queue[Station] = queue.Queue()
        self._all = [Station(g, str(g), options.backend, options.timeout) for g in gpus]
        for s in self._all:
            self.stations.put(s)
        self.pool = ThreadPoolExecutor(max_workers=self.slots, thread_name_prefix="cuopt-gpu")
        self.pending: set[Future] = set()
        self.lock = threading.Lock()
        self.starting = 0  # searches submitted that have no GPU yet: nothing is lent while there are any

    def submit(self, task: str, job: Job, extend: Callable[[Probe], float] | None = None) -> Any:
        if task == "search":
            with self.lock:
                self.starting += 1
        fut = self.pool.submit(self._run, task, job, extend)
        self.pending.add(fut)
        return fut

    def _run(self, task: str, job: Job, extend: Callable[[Probe], float] | None) -> Any:
        if task == "rewrites":
            return first_rewrites(job, self.options)
        station = self.stations.get()
        with self.lock:
            self.starting -= 1
        try:
            return run_guarded(station, job, self.options, self.progress(job), self.budgets, extend,
                               self if self.slots > 1 else None)
        finally:
            self.stations.put(station)

    def borrow(self) -> list[Station]:
        """Every idle GPU, unless a submitted search is waiting for one."""
        out: list[Station] = []
        with self.lock:
            while not self.starting:
                try:
                    out.append(self.stations.get_nowait())
                except queue.Empty:
                    break
        return out

    def give_back(self, stations: list[Station]) -> None:
        for s in stations:
            self.stations.put(s)

    def finished(self) -> list[tuple[Any, Any]]:
        done, self.pending = wait(self.pending, return_when=FIRST_COMPLETED)
        return [(f, f.result()) for f in done]

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        for s in self._all:
            s.close()


class RayCluster:
    """One Ray task per job on a cluster (`auto`, an address) or on a local Ray instance (`local`,
    with this machine's GPUs). A task whose worker dies is retried once by Ray; one lost twice
    comes back as that kernel's error. Only the driver writes files."""

    def __init__(self, address: str, options: Options, local_gpus: int = 0) -> None:
        try:
            import ray  # deferred: Ray is optional and slow to import; only --ray needs it
        except ImportError:
            raise CuoptError(f"--ray needs Ray, which is not installed: {RAY_HINT}") from None
        self.ray, self.options = ray, options
        env = {k: v for k, v in os.environ.items() if k in ("CUOPT_GPU_BACKEND", "PYTHONPATH", "CUOPT_CACHE_DIR")}
        kwargs: dict[str, Any] = {"include_dashboard": False, "ignore_reinit_error": True, "log_to_driver": False,
                                  "runtime_env": {"env_vars": env} if env else None}
        try:
            if address == "local":
                ray.init(address="local", num_gpus=local_gpus, **kwargs)
            else:
                ray.init(address=address, **kwargs)
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError...
            raise CuoptError(f"--ray {address}: cannot start or reach Ray: {exc}") from None
        self.gpus = int(ray.cluster_resources().get("GPU", 0))
        self.slots = max(1, self.gpus)
        self.remote = {name: ray.remote(num_gpus=gpus, max_retries=1)(ray_task) for name, gpus in
                       (("search", 1), ("rewrites", 0))}
        self.pending: dict[Any, Job] = {}

    def submit(self, task: str, job: Job, extend: Callable[[Probe], float] | None = None) -> Any:
        ref = self.remote[task].remote(task, job, self.options)  # a remote search is not extended
        self.pending[ref] = job
        return ref

    def finished(self) -> list[tuple[Any, Any]]:
        ready, _ = self.ray.wait(list(self.pending), num_returns=1)
        out = []
        for ref in ready:
            job = self.pending.pop(ref)
            try:
                out.append((ref, self.ray.get(ref)))
            except self.ray.exceptions.RayError as exc:
                out.append((ref, error_run(job, f"its Ray task failed twice: {str(exc).splitlines()[0]}")))
        return out

    def close(self) -> None:
        self.ray.shutdown()


_STATIONS: dict[tuple[str, ...], Station] = {}


def ray_task(task: str, job: Job, options: Options) -> Any:
    """A job inside a Ray worker: the worker process keeps its GPU's station between tasks, for as
    long as Ray gives it the same GPU."""
    if task == "rewrites":
        return first_rewrites(job, options)
    import ray  # deferred: Ray is optional and slow to import; only --ray needs it

    ids = tuple(str(g) for g in ray.get_gpu_ids())
    station = _STATIONS.get(ids)
    if station is None:
        for old in _STATIONS.values():
            old.close()
        _STATIONS.clear()
        label = f"{ray.util.get_node_ip_address()}/{','.join(ids) or '-'}"
        station = _STATIONS[ids] = Station(0, label, options.backend, options.timeout)
    return run_guarded(station, job, options)
