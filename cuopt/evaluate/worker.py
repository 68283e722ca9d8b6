"""The GPU worker process: owns the CUDA context, the buffers and the reference outputs.

It answers requests (plain dicts) from `client.WorkerClient` over a pipe. A sticky CUDA error
(illegal address, misaligned access, ...) ends the process after replying; the client starts a
new one. A hang is ended by the client, which kills the process.
"""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from cuopt.evaluate import inputs
from cuopt.evaluate.accuracy import EPS, Accuracy, Error, Scale, error, judge, own_error, scale
from cuopt.evaluate.backend import Backend, GpuError, create
from cuopt.evaluate.compare import Comparison, compare, same_bits
from cuopt.evaluate.shadow import TWINNED
from cuopt.spec.bind import BufferValue, Instance, ScalarValue
from cuopt.spec.dtypes import numpy_dtype

# struct formats of kernel arguments; struct has no bfloat16, so a bf16 scalar goes as its raw 16 bits
ARG_FORMAT = {"float32": "f", "float64": "d", "float16": "e", "bfloat16": "H", "int8": "b", "uint8": "B",
              "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q"}
FLUSH_BYTES = 256 << 20  # larger than any current GPU's L2
CAPTURED_OUTPUT = "(captured output)"  # names the comparison of an output with the capture's


@dataclass
class _Buffer:
    value: BufferValue
    work: Any
    pristine: Any  # None for out buffers
    nbytes: int


@dataclass
class _Problem:
    instance: Instance
    buffers: list[_Buffer]
    args: list[Any]
    reference: dict[str, np.ndarray] = field(default_factory=dict)
    shadow: dict[str, np.ndarray] = field(default_factory=dict)  # float64 outputs of the shadow kernel
    expected: dict[str, np.ndarray] = field(default_factory=dict)  # captured outputs (inputs.expected)
    original_error: dict[str, Error] = field(default_factory=dict)  # the reference's, against the shadow
    slack: dict[str, np.ndarray] = field(default_factory=dict)  # per element: |original - shadow|, finite
    scale: dict[str, Scale] = field(default_factory=dict)  # the shadow's, for one-pass error measures
    # the original's own comparison with the shadow, by (output, rtol, atol): a candidate whose output
    # has the original's bits gets it without comparing again
    as_original: dict[tuple[str, float, float], Comparison] = field(default_factory=dict)
    kept: dict[int, np.ndarray] = field(default_factory=dict)  # float inputs by argument, until the shadow runs


def arg_format(instance: Instance, shadow: bool = False) -> str:
    """The argument format of the kernel, or of its float64 shadow (float32 and 16-bit float scalars
    are doubles)."""
    return "".join("P" if isinstance(a, BufferValue) else
                   ARG_FORMAT["float64" if shadow and a.dtype in TWINNED else a.dtype] for a in instance.args)


def scalar_arg(a: ScalarValue) -> int | float:
    """A scalar as its ARG_FORMAT packs it: a bfloat16 as the bits of the nearest bfloat16."""
    if a.dtype == "bfloat16":
        return int(np.array(a.value, numpy_dtype("bfloat16")).view(np.uint16))
    return a.value


def as_kernel_sees(a: ScalarValue) -> float:
    """A float scalar as the kernel receives it (rounded to its type), in double: the twin's value."""
    return float(np.array(a.value, numpy_dtype(a.dtype)).astype(np.float64))


class Worker:
    def __init__(self, backend: Backend, notify: Callable[[dict[str, Any]], None] = lambda msg: None) -> None:
        self.backend = backend
        self.notify = notify  # progress messages to the client, before the final answer
        self.problems: dict[str, _Problem] = {}
        self.functions: dict[tuple, Any] = {}
        self._flush: Any = None

    # -- requests ---------------------------------------------------------------------------
    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req["op"]
        if op == "device":
            return {"status": "ok", "device": self.backend.device_info()}
        if op == "prepare":
            self.prepare(req["key"], req["instance"], req.get("keep_inputs", False))
            return {"status": "ok"}
        if op == "release":
            self.release(req["key"])
            return {"status": "ok"}
        if op == "run":
            return self.run(req["key"], req["kernel"], req["launch"], req["mode"], req.get("tolerance", {}))
        if op == "shadow":
            return self.run_shadow(req["key"], req["kernel"], req["launch"], req.get("tolerance", {}))
        if op == "time":
            return self.time(req["key"], req["kernels"], req.get("rounds", 1), req.get("min_runs", 10),
                             req.get("min_ms", 100.0), req.get("max_s", 2.0), req.get("warmup", 2))
        if op == "bandwidth":
            return {"status": "ok", "gbps": self.bandwidth(req.get("nbytes", 1 << 30))}
        return {"status": "error", "error": f"unknown request {op!r}"}

    def prepare(self, key: str, instance: Instance, keep_inputs: bool = False) -> None:
        """Allocate the problem's buffers and upload its inputs; with `keep_inputs`, the float32 and
        16-bit float inputs stay on the host until the float64 shadow runs, which then need not
        generate them again."""
        self.release(key)
        buffers, args, kept = [], [], {}
        for index, a in enumerate(instance.args):
            if isinstance(a, ScalarValue):
                args.append(scalar_arg(a))
                continue
            nbytes = a.count * numpy_dtype(a.dtype).itemsize
            work = self.backend.alloc(nbytes)
            pristine = None
            if a.role != "out" or a.before is not None:  # a captured out buffer starts as the program had it
                pristine = self.backend.alloc(nbytes)
                data = inputs.initial(a, instance.seed, index)
                self.backend.upload(pristine, data)
                if keep_inputs and a.dtype in TWINNED:
                    kept[index] = data
            buffers.append(_Buffer(a, work, pristine, nbytes))
            args.append(int(work))
        self.problems[key] = _Problem(instance, buffers, args, kept=kept, expected=inputs.expected(instance))

    def release(self, key: str) -> None:
        problem = self.problems.pop(key, None)
        if problem is not None:
            for b in problem.buffers:
                self.backend.free(b.work)
                if b.pristine is not None:
                    self.backend.free(b.pristine)

    def run(self, key: str, kernel: dict, launch: dict, mode: str, tolerance: dict) -> dict[str, Any]:
        """Launch once on fresh inputs with poisoned outputs; keep ("reference") or compare the outputs."""
        problem = self.problems[key]
        fn = self._function(kernel, problem.instance)
        self._restore(problem, inputs_too=True)
        start = time.perf_counter()
        self.backend.launch(fn, launch["grid"], launch["block"], launch["shared"], problem.args)
        self.backend.synchronize()
        wall_ms = (time.perf_counter() - start) * 1e3
        self.notify({"status": "launched", "wall_ms": wall_ms})
        outputs = {}
        for b in problem.buffers:
            if b.value.role != "in":
                host = np.empty(b.value.count, numpy_dtype(b.value.dtype))
                self.backend.download(b.work, host)
                outputs[b.value.name] = host
        if mode == "reference":
            problem.reference = outputs
            return {"status": "ok", "wall_ms": wall_ms}
        results = []
        for name, out in outputs.items():
            rtol, atol = tolerance.get(name, (0.0, 0.0))
            if name in problem.shadow:
                results.append(self._against_shadow(problem, name, out, rtol, atol))
            else:
                results.append(compare(name, out, problem.reference[name], rtol, atol))
        for name, want in problem.expected.items():  # the program's own outputs on these inputs
            rtol, atol = tolerance.get(name, (0.0, 0.0))
            slack = own_error(want, problem.shadow[name]) if name in problem.shadow else None
            results.append(compare(f"{name} {CAPTURED_OUTPUT}", outputs[name], want, rtol, atol, slack))
        return {"status": "ok", "wall_ms": wall_ms, "comparisons": results}

    def run_shadow(self, key: str, kernel: dict, launch: dict, tolerance: dict) -> dict[str, Any]:
        """Launch the float64 shadow on the problem's inputs (float32 and 16-bit float ones converted
        exactly to float64), keep its float outputs as the reference, and measure the original's
        error against them."""
        problem = self.problems[key]
        fn = self._load(kernel, arg_format(problem.instance, shadow=True))
        self._restore(problem, inputs_too=True)
        buffers, args, twins = iter(problem.buffers), [], []
        try:
            for index, a in enumerate(problem.instance.args):
                if isinstance(a, ScalarValue):
                    args.append(as_kernel_sees(a) if a.dtype in TWINNED else a.value)
                    continue
                b = next(buffers)
                if a.dtype not in TWINNED:
                    args.append(int(b.work))
                    continue
                twin = self.backend.alloc(a.count * 8)
                twins.append((a, twin))
                if a.role == "out" and a.before is None:
                    self.backend.fill(twin, inputs.POISON_BYTE, a.count * 8)
                else:
                    data = problem.kept.pop(index, None)
                    if data is None:
                        data = inputs.initial(a, problem.instance.seed, index)
                    self.backend.upload(twin, data.astype(np.float64))
                args.append(int(twin))
            start = time.perf_counter()
            self.backend.launch(fn, launch["grid"], launch["block"], launch["shared"], args)
            self.backend.synchronize()
            wall_ms = (time.perf_counter() - start) * 1e3
            shadow = {}
            for a, twin in twins:
                if a.role != "in":
                    host = np.empty(a.count, np.float64)
                    self.backend.download(twin, host)
                    shadow[a.name] = host
        finally:
            problem.kept.clear()
            for _, twin in twins:
                self.backend.free(twin)
        problem.shadow = shadow
        problem.scale = {name: scale(ref) for name, ref in shadow.items()}
        problem.original_error = {name: error(problem.reference[name], ref, problem.scale[name])
                                  for name, ref in shadow.items()}
        problem.slack = {name: own_error(problem.reference[name], ref) for name, ref in shadow.items()}
        problem.as_original = {}
        checks = []
        for name, ref in shadow.items():
            rtol, atol = tolerance.get(name, (0.0, 0.0))
            check = compare(name, problem.reference[name], ref, rtol, atol, problem.slack[name])
            checks.append(check)
            original = problem.original_error[name]
            problem.as_original[(name, rtol, atol)] = replace(
                check, accuracy=Accuracy(original, original, EPS[problem.reference[name].dtype.name]))
        return {"status": "ok", "wall_ms": wall_ms, "original": problem.original_error, "checks": checks}

    def _against_shadow(self, problem: _Problem, name: str, out: np.ndarray, rtol: float,
                        atol: float) -> Comparison:
        """`out` judged against the float64 shadow. An output bit for bit the original's is judged as
        the original was (the same comparison of the same numbers), without a pass over the shadow."""
        key = (name, rtol, atol)
        if key in problem.as_original and same_bits(out, problem.reference[name]):
            return problem.as_original[key]
        ref = problem.shadow[name]
        return replace(compare(name, out, ref, rtol, atol, problem.slack[name]),
                       accuracy=judge(out, ref, problem.original_error[name], out.dtype.name, problem.scale[name]))

    def time(self, key: str, kernels: list[dict], rounds: int, min_runs: int, min_ms: float, max_s: float,
             warmup: int) -> dict[str, Any]:
        """Median-ready samples per kernel, interleaved by rounds (A, B, A, B, ...).

        Each sample: restore inout buffers, flush L2 by writing a large scratch buffer, then time
        the launch alone with CUDA events."""
        problem = self.problems[key]
        fns = [self._function(k["kernel"], problem.instance) for k in kernels]
        samples: list[list[float]] = [[] for _ in kernels]
        for _ in range(max(1, rounds)):
            for i, (fn, k) in enumerate(zip(fns, kernels)):
                launch = k["launch"]
                for _ in range(warmup):
                    self._restore(problem, inputs_too=False)
                    self.backend.launch(fn, launch["grid"], launch["block"], launch["shared"], problem.args)
                self.backend.synchronize()
                runs, total, start = 0, 0.0, time.perf_counter()
                while True:
                    self._restore(problem, inputs_too=False)
                    self.backend.fill(self._flush_buffer(), 0, FLUSH_BYTES)
                    ms = self.backend.timed_launch(fn, launch["grid"], launch["block"], launch["shared"],
                                                   problem.args)
                    samples[i].append(ms)
                    runs, total = runs + 1, total + ms
                    elapsed = time.perf_counter() - start
                    if runs >= min_runs and (total >= min_ms or elapsed >= max_s):
                        break
                    if elapsed >= max_s and runs >= 3:
                        break
        return {"status": "ok", "samples": samples}

    def bandwidth(self, nbytes: int) -> float:
        """Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written."""
        a, b = self.backend.alloc(nbytes), self.backend.alloc(nbytes)
        try:
            self.backend.fill(a, 1, nbytes)
            for _ in range(3):
                self.backend.copy(b, a, nbytes)
            self.backend.synchronize()
            times = sorted(self.backend.timed_copy(b, a, nbytes) for _ in range(20))
            return 2 * nbytes / (times[len(times) // 2] * 1e-3) / 1e9
        finally:
            self.backend.free(a)
            self.backend.free(b)

    # -- helpers ----------------------------------------------------------------------------
    def _function(self, kernel: dict, instance: Instance) -> Any:
        return self._load(kernel, arg_format(instance))

    def _load(self, kernel: dict, fmt: str) -> Any:
        key = (kernel["cubin"], kernel["symbol"], fmt, kernel.get("dynamic_shared", 0))
        if key not in self.functions:
            self.functions[key] = self.backend.load(kernel["cubin"], kernel["symbol"], fmt,
                                                    kernel.get("dynamic_shared", 0))
        return self.functions[key]

    def _restore(self, problem: _Problem, inputs_too: bool) -> None:
        for b in problem.buffers:
            if b.pristine is None:  # an out buffer: poisoned, so that an element left unwritten shows
                self.backend.fill(b.work, inputs.POISON_BYTE, b.nbytes)
            elif b.value.role != "in" or inputs_too:
                self.backend.copy(b.work, b.pristine, b.nbytes)

    def _flush_buffer(self) -> Any:
        if self._flush is None:
            self._flush = self.backend.alloc(FLUSH_BYTES)
        return self._flush


def serve(conn: Any, backend_name: str, options: dict[str, Any]) -> None:
    """Worker process entry point. Ctrl-C is for the parent: it stops the search, not the GPU."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        backend = create(backend_name, **options)
        info = backend.device_info()
    except Exception as exc:
        conn.send({"status": "no-gpu", "error": f"{type(exc).__name__}: {exc}".strip()})
        return
    conn.send({"status": "ready", "device": info})
    worker = Worker(backend, conn.send)
    while True:
        try:
            req = conn.recv()
        except EOFError:
            backend.close()
            return
        if req.get("op") == "quit":
            backend.close()
            conn.send({"status": "ok"})
            return
        try:
            resp = worker.handle(req)
        except GpuError as exc:
            conn.send({"status": "fault" if exc.sticky else "launch-error", "error": str(exc)})
            if exc.sticky:
                conn.close()
                os._exit(3)
            continue
        except Exception as exc:  # a bug or bad request: report it, keep serving
            resp = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
        conn.send(resp)
