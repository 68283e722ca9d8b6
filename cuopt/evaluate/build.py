"""How the variants of one kernel are compiled: with the file's compile settings, and, when some
sizes are compile-time macros, once per size set with `-DNAME=value` for those sizes."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from cuopt.compile_settings import CompileSettings
from cuopt.errors import CuoptError
from cuopt.evaluate.compile import CompileError, Compiled, compile_kernel, compile_many
from cuopt.spec.model import KernelSpec

if TYPE_CHECKING:
    from cuopt.targets import Target


@dataclass(frozen=True)
class BuildPlan:
    """The nvcc settings of each distinct build, and which build serves each size set (the timing
    sizes first, then the check sizes, as `Bound.instances` orders them)."""

    kernel: str
    builds: tuple[CompileSettings, ...]
    build_of: tuple[int, ...]  # size set index -> index into builds

    @classmethod
    def of(cls, spec: KernelSpec, kernel: str, settings: CompileSettings,
           macro_sizes: frozenset[str] = frozenset()) -> BuildPlan:
        """One build when no size is a macro, else one per distinct value of the macro sizes."""
        unknown = sorted(macro_sizes - set(spec.sizes))
        if unknown:
            raise CuoptError(f"{spec.where('sizes')}: macro size {unknown[0]!r} is not a size of the spec")
        index: dict[tuple[tuple[str, int], ...], int] = {}
        build_of = []
        for sizes in (spec.sizes, *spec.check_sizes):
            values = tuple((name, sizes[name]) for name in sorted(macro_sizes))
            build_of.append(index.setdefault(values, len(index)))
        return cls(kernel, tuple(settings.defining(dict(v)) for v in index), tuple(build_of))

    def compile(self, source: str, arch: str) -> Compiled:
        """Every build of `source`; raises the first CompileError."""
        built: list[Compiled | CompileError] = []
        for settings in self.builds:
            built.append(_try(source, self.kernel, arch, settings))
            if isinstance(built[-1], CompileError):
                break
        result = self.combine(built)
        if isinstance(result, CompileError):
            raise result
        return result

    def combine(self, built: list[Compiled | CompileError]) -> Compiled | CompileError:
        """One Compiled from the builds, in the order of `builds`: the timing size set's cubin, with
        the cubin of every size set in `sized` when there is more than one build."""
        for b, settings in zip(built, self.builds):
            if isinstance(b, CompileError):
                if len(self.builds) == 1:
                    return b
                macros = " ".join(arg for arg in settings.nvcc_args() if arg.startswith("-D"))
                return CompileError(f"with {macros}: {b}", b.log)
        if len(built) == 1:
            return built[0]
        per_set = tuple(built[i] for i in self.build_of)
        return replace(per_set[0], sized=per_set)  # type: ignore[arg-type]


def plan_for(target: Target) -> BuildPlan:
    """The plan of a target: its resolved settings with its own directory searched first."""
    return BuildPlan.of(target.spec, target.kernel.entry, target.settings.searching(target.path.parent),
                        target.macro_sizes)


def compile_all(items: list[tuple[BuildPlan, str]], arch: str) -> list[Compiled | CompileError]:
    """Compile (plan, source) pairs, every build of every pair in parallel."""
    jobs = [(source, plan.kernel, s) for plan, source in items for s in plan.builds]
    built = compile_many(jobs, arch=arch)
    out: list[Compiled | CompileError] = []
    start = 0
    for plan, _ in items:
        out.append(plan.combine(built[start:start + len(plan.builds)]))
        start += len(plan.builds)
    return out


def _try(source: str, kernel: str, arch: str, settings: CompileSettings) -> Compiled | CompileError:
    try:
        return compile_kernel(source, kernel, arch=arch, settings=settings)
    except CompileError as exc:
        return exc
