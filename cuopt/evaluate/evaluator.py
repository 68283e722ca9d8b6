"""Evaluate variants of one kernel: compile -> run -> validate against the original -> time."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cuopt.evaluate.client import KernelRef, LaunchDims, Shadowed, WorkerClient
from cuopt.evaluate.compare import Comparison
from cuopt.evaluate.compile import CompileError, Compiled, Resources, compile_kernel
from cuopt.evaluate.shadow import Reference, compile_shadow
from cuopt.evaluate.stats import Timing, summarize
from cuopt.spec.bind import Bound, Instance
from cuopt.spec.model import Buffer, Launch

MAX_GRID = (2**31 - 1, 65535, 65535)


@dataclass(frozen=True)
class Variant:
    """A version of the kernel: the whole file's source and the launch it needs."""

    source: str
    launch: Launch


@dataclass(frozen=True)
class TimingOptions:
    min_runs: int = 10
    min_ms: float = 100.0
    max_s: float = 2.0


@dataclass
class Outcome:
    status: str  # "ok" or one of FAILURES
    detail: str = ""
    timing: Timing | None = None
    resources: Resources | None = None
    comparisons: list[Comparison] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def launch_dims(launch: Launch, instance: Instance) -> LaunchDims:
    return LaunchDims(launch.grid3(instance.sizes), launch.block3, launch.shared_bytes(instance.sizes))


def check_dims(dims: LaunchDims, max_shared: int) -> str | None:
    """Why CUDA would refuse this launch, or None."""
    threads = dims.block[0] * dims.block[1] * dims.block[2]
    if threads > 1024:
        return f"{threads} threads per block (at most 1024)"
    if dims.block[2] > 64:
        return f"block z of {dims.block[2]} (at most 64)"
    for g, limit in zip(dims.grid, MAX_GRID):
        if not 1 <= g <= limit:
            return f"grid {dims.grid} out of range"
    if max_shared and dims.shared > max_shared:
        return f"{dims.shared} bytes of dynamic shared memory (device allows {max_shared})"
    return None


class KernelEvaluator:
    """Owns the problems (inputs at the timing and check sizes) of one kernel and its reference."""

    def __init__(self, cu_path: Path, bound: Bound, client: WorkerClient, *, arch: str,
                 timing: TimingOptions = TimingOptions(), seed: int | None = None) -> None:
        self.cu_path = cu_path
        self.bound = bound
        self.spec = bound.spec
        self.client = client
        self.arch = arch
        self.timing = timing
        self.instances = bound.instances(seed=seed)
        self.tolerance = {a.name: self.spec.tolerance_for(a.dtype) for a in self.spec.args
                          if isinstance(a, Buffer) and a.role != "in"}
        self._keys: list[str] = []
        self.reference = Reference("original", "not set yet")

    @property
    def timing_instance(self) -> Instance:
        return self.instances[0]

    def compile(self, variant: Variant) -> Compiled:
        return compile_kernel(variant.source, self.bound.kernel_name, arch=self.arch,
                              include_dirs=[self.cu_path.parent])

    def set_reference(self, compiled: Compiled, launch: Launch, source: str | None = None) -> Outcome:
        """Make `compiled` (the original kernel) the reference at every size. Given its `source`, the
        float outputs of its float64 shadow are the reference wherever it can be built and run, and
        variants are judged by accuracy (`self.reference` says which reference, and why)."""
        twin, reason = (compile_shadow(source, self.bound, lambda s: self.compile(Variant(s, launch)))
                        if source is not None else (None, "the original's source was not given"))
        if twin is not None:
            done = self._set_reference(compiled, launch, twin)
            if not isinstance(done, str):
                return done
            reason = done
        self.reference = Reference("original", reason)
        outcome = self._set_reference(compiled, launch, None)
        assert not isinstance(outcome, str)
        return outcome

    def _set_reference(self, compiled: Compiled, launch: Launch, twin: Compiled | None) -> Outcome | str:
        """Register the problems with `compiled` (and `twin`, its shadow) as the reference; with a twin,
        a string when the shadow cannot be the reference: why."""
        for key in self._keys:
            self.client.release(key)
        self._keys = []
        reference = Reference("float64")
        max_shared = int((self.client.device or {}).get("max_shared_optin", 0))
        for inst in self.instances:
            dims = launch_dims(launch, inst)
            shadow = None
            if twin is not None:
                twin_dims = LaunchDims(dims.grid, dims.block, 2 * dims.shared)  # float arrays doubled
                if max_shared and twin_dims.shared > max_shared:
                    return f"the float64 twin needs {twin_dims.shared} bytes of dynamic shared memory"
                shadow = Shadowed(_ref(twin, twin_dims), twin_dims, self.tolerance)
            key = self.client.register(inst, _ref(compiled, dims), dims, shadow)
            self._keys.append(key)
            resp = self.client.ensure(key)
            if resp.get("shadow_failed"):
                return f"the float64 twin fails at {inst.label} ({_sizes(inst)}): {resp.get('error')}"
            if resp["status"] != "ok":
                return Outcome(resp["status"], f"{inst.label} ({_sizes(inst)}): {resp.get('error')}")
            if twin is not None:
                off = [c for c in resp["checks"] if c.mismatches]
                if off:
                    return (f"the original is off the float64 result by more than the spec's tolerance at "
                            f"{inst.label} ({off[0].describe()})")
                reference.original[inst.label] = resp["original"]
                reference.shadow_ms += resp["wall_ms"]
        if twin is not None:
            self.reference = reference
        return Outcome("ok")

    def validate(self, compiled: Compiled, launch: Launch) -> Outcome:
        """Run at every size; every output must match the reference."""
        comparisons: list[Comparison] = []
        max_shared = int((self.client.device or {}).get("max_shared_optin", 0))
        for inst, key in zip(self.instances, self._keys):
            dims = launch_dims(launch, inst)
            refused = check_dims(dims, max_shared)
            if refused:
                return Outcome("launch-error", refused, resources=compiled.resources)
            resp = self.client.run(key, _ref(compiled, dims), dims, self.tolerance)
            if resp["status"] != "ok":
                return Outcome(resp["status"], f"{inst.label} ({_sizes(inst)}): {resp.get('error')}",
                               resources=compiled.resources)
            for c in resp["comparisons"]:
                comparisons.append(c)
                if not c.ok:
                    return Outcome("wrong-answer", f"{inst.label} ({_sizes(inst)}): {c.describe()}",
                                   resources=compiled.resources, comparisons=comparisons)
        return Outcome("ok", resources=compiled.resources, comparisons=comparisons)

    def time(self, entries: list[tuple[Compiled, Launch]], rounds: int = 1) -> list[Timing] | Outcome:
        """Time kernels at the timing size, interleaved round by round."""
        inst = self.timing_instance
        kernels = [(_ref(c, launch_dims(l, inst)), launch_dims(l, inst)) for c, l in entries]
        resp = self.client.time(self._keys[0], kernels, rounds=rounds, min_runs=self.timing.min_runs,
                                min_ms=self.timing.min_ms, max_s=self.timing.max_s)
        if resp["status"] != "ok":
            return Outcome(resp["status"], f"timing: {resp.get('error')}")
        return [summarize(s) for s in resp["samples"]]

    def evaluate(self, variant: Variant, compiled: Compiled | CompileError | None = None,
                 timed: bool = True) -> Outcome:
        """Compile (unless given), validate at every size, then time (unless `timed` is False)."""
        if compiled is None:
            try:
                compiled = self.compile(variant)
            except CompileError as exc:
                return Outcome("compile-error", str(exc))
        if isinstance(compiled, CompileError):
            return Outcome("compile-error", str(compiled))
        outcome = self.validate(compiled, variant.launch)
        if not outcome.ok or not timed:
            return outcome
        timed = self.time([(compiled, variant.launch)])
        if isinstance(timed, Outcome):
            timed.resources = compiled.resources
            return timed
        outcome.timing = timed[0]
        return outcome

    def close(self) -> None:
        for key in self._keys:
            self.client.release(key)
        self._keys = []


def _ref(compiled: Compiled, dims: LaunchDims) -> KernelRef:
    return KernelRef(str(compiled.cubin), compiled.symbol, dims.shared)


def _sizes(inst: Instance) -> str:
    return ", ".join(f"{k}={v}" for k, v in inst.sizes.items())
