"""Evaluate variants of one kernel: compile -> run -> validate against the original -> time."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from cuopt.compile_settings import NO_SETTINGS, CompileSettings
from cuopt.evaluate.build import BuildPlan
from cuopt.evaluate.client import KernelRef, LaunchDims, Shadowed, WorkerClient
from cuopt.evaluate.compare import Comparison
from cuopt.evaluate.compile import CompileError, Compiled, Resources
from cuopt.evaluate.shadow import Reference, compile_shadow, shared_growth
from cuopt.evaluate.stats import Timing, summarize
from cuopt.evaluate.worker import CAPTURED_OUTPUT
from cuopt.source.preprocess import macros_of
from cuopt.spec.bind import Bound, Instance
from cuopt.spec.model import Buffer, Launch

if TYPE_CHECKING:
    from cuopt.targets import Target

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
    """Owns the problems (inputs at the timing and check sizes) of one kernel and its reference.

    Variants compile with `settings` (the file's directory searched first); the sizes named in
    `macro_sizes` are compile-time macros: each size set runs its own build, with their definitions
    set to its values (`build.BuildPlan`)."""

    def __init__(self, cu_path: Path, bound: Bound, client: WorkerClient, *, arch: str,
                 timing: TimingOptions = TimingOptions(), seed: int | None = None,
                 settings: CompileSettings = NO_SETTINGS, macro_sizes: frozenset[str] = frozenset()) -> None:
        self.cu_path = cu_path
        self.bound = bound
        self.spec = bound.spec
        self.client = client
        self.arch = arch
        self.timing = timing
        self.settings = settings
        self.macro_sizes = macro_sizes
        self.plan = BuildPlan.of(self.spec, bound.kernel_name, settings.searching(cu_path.parent), macro_sizes,
                                 cu_path)
        self.seed = seed
        self.instances = bound.instances(seed=seed)
        self.tolerance = {a.name: self.spec.tolerance_for(a.dtype) for a in self.spec.args
                          if isinstance(a, Buffer) and a.role != "in"}
        self._keys: list[str] = []
        self.reference = Reference("original", "not set yet")

    @classmethod
    def for_target(cls, target: Target, client: WorkerClient, *, arch: str,
                   timing: TimingOptions = TimingOptions()) -> KernelEvaluator:
        """An evaluator with the target's compile settings and macro sizes."""
        return cls(target.path, target.bound, client, arch=arch, timing=timing, settings=target.settings,
                   macro_sizes=target.macro_sizes)

    def sibling(self, *, timing: TimingOptions, seed: int | None = None,
                client: WorkerClient | None = None) -> KernelEvaluator:
        """Another evaluator of the same kernel, built the same way, with other timing or inputs, on
        this GPU's worker or `client`'s."""
        return KernelEvaluator(self.cu_path, self.bound, client or self.client, arch=self.arch, timing=timing,
                               seed=seed, settings=self.settings, macro_sizes=self.macro_sizes)

    @property
    def timing_instance(self) -> Instance:
        return self.instances[0]

    def compile(self, variant: Variant) -> Compiled:
        return self.plan.compile(variant.source, self.arch)

    def set_reference(self, compiled: Compiled, launch: Launch, source: str | None = None) -> Outcome:
        """Make `compiled` (the original kernel) the reference at every size. Given its `source`, the
        float outputs of its float64 shadow are the reference wherever it can be built and run, and
        variants are judged by accuracy (`self.reference` says which reference, and why)."""
        twin, reason = None, "the original's source was not given"
        if source is not None:
            macros = macros_of(source.encode(), self.cu_path, self.settings.include_dirs, self.settings.defines)
            twin, reason = compile_shadow(source, self.bound, self._compile_twin, macros=macros)
        if twin is not None:
            done = self._set_reference(compiled, launch, twin)
            if not isinstance(done, str):
                return self._reproduces_capture(compiled, launch) if done.ok else done
            reason = done
        self.reference = Reference("original", reason)
        outcome = self._set_reference(compiled, launch, None)
        assert not isinstance(outcome, str)
        return self._reproduces_capture(compiled, launch) if outcome.ok else outcome

    def _reproduces_capture(self, compiled: Compiled, launch: Launch) -> Outcome:
        """The original run on the captured inputs must give the captured outputs (within the
        tolerance): otherwise the spec does not describe the launch the program made, and validating
        variants on the captured data would judge them against outputs the kernel does not compute."""
        for i, (inst, key) in enumerate(zip(self.instances, self._keys)):
            if not inst.capture:
                continue
            dims = launch_dims(launch, inst)
            resp = self.client.run(key, _ref(compiled.at(i), dims), dims, self.tolerance)
            if resp["status"] != "ok":
                return Outcome(resp["status"], f"{inst.label} ({_sizes(inst)}): {resp.get('error')}")
            off = [c for c in resp["comparisons"] if c.name.endswith(CAPTURED_OUTPUT) and not c.ok]
            if off:
                return Outcome("wrong-answer", f"{inst.label} ({_sizes(inst)}): the original kernel does not give the "
                                               f"captured outputs ({off[0].describe()}): the spec does not describe the "
                                               "captured launch; capture again, or remove `capture` from the spec")
        return Outcome("ok")

    def _compile_twin(self, source: str, kernel: str) -> Compiled:
        """The float64 twin built as the original is (same settings and size sets), as `kernel`."""
        return replace(self.plan, kernel=kernel).compile(source, self.arch)

    def _set_reference(self, compiled: Compiled, launch: Launch, twin: Compiled | None) -> Outcome | str:
        """Register the problems with `compiled` (and `twin`, its shadow) as the reference; with a twin,
        a string when the shadow cannot be the reference: why."""
        for key in self._keys:
            self.client.release(key)
        self._keys = []
        reference = Reference("float64")
        max_shared = int((self.client.device or {}).get("max_shared_optin", 0))
        for i, inst in enumerate(self.instances):
            dims = launch_dims(launch, inst)
            shadow = None
            if twin is not None:
                twin_dims = LaunchDims(dims.grid, dims.block, shared_growth(self.bound) * dims.shared)
                if max_shared and twin_dims.shared > max_shared:
                    return f"the float64 twin needs {twin_dims.shared} bytes of dynamic shared memory"
                shadow = Shadowed(_ref(twin.at(i), twin_dims), twin_dims, self.tolerance)
            key = self.client.register(inst, _ref(compiled.at(i), dims), dims, shadow)
            self._keys.append(key)
            resp = self.client.ensure(key)
            if resp.get("shadow_failed"):
                return f"the float64 twin fails at {inst.label} ({_sizes(inst)}): {resp.get('error')}"
            if resp["status"] != "ok":
                return Outcome(resp["status"], f"{inst.label} ({_sizes(inst)}): {resp.get('error')}")
            if twin is not None:
                off = [c for c in resp["checks"] if c.mismatches]
                if off:
                    return (f"the original's NaN or infinite outputs disagree with the float64 result at "
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
        for i, (inst, key) in enumerate(zip(self.instances, self._keys)):
            dims = launch_dims(launch, inst)
            refused = check_dims(dims, max_shared)
            if refused:
                return Outcome("launch-error", refused, resources=compiled.resources)
            resp = self.client.run(key, _ref(compiled.at(i), dims), dims, self.tolerance)
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
        kernels = [(_ref(c.at(0), launch_dims(l, inst)), launch_dims(l, inst)) for c, l in entries]
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
