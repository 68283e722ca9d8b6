"""Parent side of the GPU worker: start it, send requests with time limits, restart it after a
fault or a hang, and re-create its state (problems and references) when that happens."""
from __future__ import annotations

import functools
import multiprocessing as mp
import threading
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from cuopt.errors import NoGpuError
from cuopt.evaluate.worker import serve
from cuopt.spec.bind import Instance

START_TIMEOUT_S = 120.0
F = TypeVar("F", bound=Callable[..., Any])


def _serialised(method: F) -> F:
    """One request sequence at a time per worker, whichever thread asks (a GPU lent to another
    search is still told to free the lender's problems)."""
    @functools.wraps(method)
    def locked(self: WorkerClient, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)
    return locked  # type: ignore[return-value]


@dataclass(frozen=True)
class KernelRef:
    """What the worker needs to load a kernel."""

    cubin: str
    symbol: str
    dynamic_shared: int = 0

    def wire(self) -> dict[str, Any]:
        return {"cubin": self.cubin, "symbol": self.symbol, "dynamic_shared": self.dynamic_shared}


@dataclass(frozen=True)
class LaunchDims:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int = 0

    def wire(self) -> dict[str, Any]:
        return {"grid": self.grid, "block": self.block, "shared": self.shared}


@dataclass(frozen=True)
class Shadowed:
    """The float64 shadow of a problem's reference kernel, its launch and the spec's tolerances."""

    kernel: KernelRef
    launch: LaunchDims
    tolerance: dict[str, tuple[float, float]]


class WorkerClient:
    """Talks to one worker process on one GPU."""

    def __init__(self, backend: str = "pycuda", timeout_s: float = 10.0, device: int = 0,
                 backend_options: dict[str, Any] | None = None) -> None:
        self.backend = backend
        self.timeout_s = timeout_s
        self.options = {"device": device, **(backend_options or {})}
        self.device: dict[str, Any] | None = None
        self.restarts = 0
        self._proc: Any = None
        self._conn: Any = None
        self._generation = 0
        self._problems: dict[str, tuple[Instance, KernelRef, LaunchDims]] = {}
        self._shadows: dict[str, Shadowed] = {}  # problem key -> its float64 shadow kernel
        self._accuracy: dict[str, dict[str, Any]] = {}  # problem key -> what the shadow run measured
        self._ready: dict[str, int] = {}  # problem key -> worker generation that holds it
        self._users: dict[str, int] = {}  # problem key -> registrations not yet released
        self._lock = threading.RLock()

    # -- process ----------------------------------------------------------------------------
    def start(self) -> dict[str, Any]:
        if self._proc is not None and self._proc.is_alive():
            assert self.device is not None
            return self.device
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=serve, args=(child, self.backend, self.options), daemon=True)
        proc.start()
        child.close()
        if not parent.poll(START_TIMEOUT_S):
            proc.kill()
            raise NoGpuError(f"the GPU worker did not start within {START_TIMEOUT_S:.0f} s")
        try:
            hello = parent.recv()
        except EOFError:
            proc.join(5)
            raise NoGpuError(f"the GPU worker exited while starting (exit code {proc.exitcode})") from None
        if hello["status"] != "ready":
            proc.join(5)
            raise NoGpuError(f"no CUDA GPU found ({hello.get('error', 'unknown error')}); "
                             "use --dry-run to check specs and compile without a GPU")
        self._proc, self._conn, self.device = proc, parent, hello["device"]
        self._generation += 1
        return hello["device"]

    def kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join(10)
        self._proc = self._conn = None

    def close(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send({"op": "quit"})
                if self._conn.poll(10):
                    self._conn.recv()
            except (OSError, EOFError):
                pass
            self._proc.join(10)
        self.kill()

    def __enter__(self) -> WorkerClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @_serialised
    def request(self, req: dict[str, Any], timeout_s: float, after_launch_s: float | None = None) -> dict[str, Any]:
        """Send one request; a hang past `timeout_s` kills the worker and says "timeout". Once the
        worker reports the launch finished, `after_launch_s` bounds the rest (downloads, comparison)."""
        self.start()
        try:
            return self._exchange(req, timeout_s, after_launch_s)
        except KeyboardInterrupt:
            self.kill()  # the answer would arrive out of turn; start afresh next time
            self.restarts += 1
            raise

    def _exchange(self, req: dict[str, Any], timeout_s: float, after_launch_s: float | None) -> dict[str, Any]:
        try:
            self._conn.send(req)
            wait = timeout_s
            while True:
                if not self._conn.poll(wait):
                    self.kill()
                    self.restarts += 1
                    return {"status": "timeout", "error": f"no answer within {wait:.1f} s; the worker was killed"}
                resp = self._conn.recv()
                if resp["status"] != "launched":
                    break
                wait = after_launch_s if after_launch_s is not None else timeout_s
        except (EOFError, OSError, BrokenPipeError):
            code = self._proc.exitcode if self._proc is not None else None
            self.kill()
            self.restarts += 1
            return {"status": "fault", "error": f"the GPU worker died (exit code {code})"}
        if resp["status"] == "fault":
            self.kill()
            self.restarts += 1
        return resp

    # -- problems ---------------------------------------------------------------------------
    @_serialised
    def register(self, instance: Instance, reference: KernelRef, launch: LaunchDims,
                 shadow: Shadowed | None = None) -> str:
        """Declare a problem (inputs at one size) and the kernel whose outputs are the reference; with
        `shadow`, its float64 twin's float outputs are the reference and the kernel's own are judged."""
        key = f"{instance.key}|{reference.cubin}|{launch.grid}|{launch.block}"
        if shadow is not None:
            key += f"|shadow {shadow.kernel.cubin}"
            self._shadows[key] = shadow
        self._problems[key] = (instance, reference, launch)
        self._users[key] = self._users.get(key, 0) + 1
        return key

    @_serialised
    def ensure(self, key: str) -> dict[str, Any]:
        """Make sure the live worker holds the problem's inputs and reference outputs."""
        self.start()
        if self._ready.get(key) == self._generation:
            return {"status": "ok", **self._accuracy.get(key, {})}
        instance, reference, launch = self._problems[key]
        budget = self.timeout_s + 30 + instance.bytes_moved() / 2e8
        resp = self.request({"op": "prepare", "key": key, "instance": instance,
                             "keep_inputs": key in self._shadows}, budget)
        if resp["status"] != "ok":
            return {**resp, "error": f"preparing inputs: {resp.get('error')}"}
        resp = self.request({"op": "run", "key": key, "kernel": reference.wire(), "launch": launch.wire(),
                             "mode": "reference"}, *self._run_budget(instance))
        if resp["status"] != "ok":
            return {**resp, "error": f"the reference kernel failed: {resp.get('error')}"}
        shadow = self._shadows.get(key)
        if shadow is not None:
            resp = self.request({"op": "shadow", "key": key, "kernel": shadow.kernel.wire(),
                                 "launch": shadow.launch.wire(), "tolerance": shadow.tolerance},
                                *self._run_budget(instance))
            if resp["status"] != "ok":
                if self._proc is not None:  # the worker lives on: it frees the problem, which stays unready
                    self.request({"op": "release", "key": key}, 30)
                return {**resp, "error": f"the float64 shadow failed: {resp.get('error')}", "shadow_failed": True}
            self._accuracy[key] = {k: resp[k] for k in ("original", "checks", "wall_ms")}
        self._ready[key] = self._generation
        return resp

    @_serialised
    def release(self, key: str) -> None:
        """Drop one registration; the worker frees the buffers when the last one goes."""
        self._users[key] = self._users.get(key, 1) - 1
        if self._users[key] > 0:
            return
        del self._users[key]
        self._problems.pop(key, None)
        self._shadows.pop(key, None)
        self._accuracy.pop(key, None)
        if self._ready.pop(key, None) == self._generation and self._proc is not None:
            self.request({"op": "release", "key": key}, 30)

    @_serialised
    def run(self, key: str, kernel: KernelRef, launch: LaunchDims,
            tolerance: dict[str, tuple[float, float]]) -> dict[str, Any]:
        """Run `kernel` on the problem and compare with the reference outputs."""
        ready = self.ensure(key)
        if ready["status"] != "ok":
            return ready
        instance = self._problems[key][0]
        return self.request({"op": "run", "key": key, "kernel": kernel.wire(), "launch": launch.wire(),
                             "mode": "compare", "tolerance": tolerance}, *self._run_budget(instance))

    @_serialised
    def time(self, key: str, kernels: list[tuple[KernelRef, LaunchDims]], *, rounds: int = 1,
             min_runs: int = 10, min_ms: float = 100.0, max_s: float = 2.0) -> dict[str, Any]:
        ready = self.ensure(key)
        if ready["status"] != "ok":
            return ready
        budget = self.timeout_s + 30 + rounds * len(kernels) * (max_s + self.timeout_s)
        return self.request({"op": "time", "key": key, "rounds": rounds, "min_runs": min_runs, "min_ms": min_ms,
                             "max_s": max_s,
                             "kernels": [{"kernel": k.wire(), "launch": d.wire()} for k, d in kernels]}, budget)

    @_serialised
    def bandwidth(self) -> float:
        resp = self.request({"op": "bandwidth"}, 120)
        if resp["status"] != "ok":
            raise NoGpuError(f"measuring copy bandwidth failed: {resp.get('error')}")
        return float(resp["gbps"])

    def _run_budget(self, instance: Instance) -> tuple[float, float]:
        """Seconds until the launch must have finished, then for downloading and comparing."""
        return self.timeout_s + 1 + instance.bytes_moved() / 1e10, 10 + instance.bytes_moved() / 2e8
