"""How the variants of one kernel are compiled: with the file's compile settings, and, when some
sizes are compile-time macros, once per size set with those sizes' definitions edited in the
variant and in private copies of the user's headers that define them (a size the user's own
settings `-D`efine is set by that `-D` too); nothing else reaches the compiler's command line."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from cuopt.compile_settings import CompileSettings
from cuopt.errors import CuoptError
from cuopt.evaluate.compile import CompileError, Compiled, compile_kernel, compile_many
from cuopt.source.overrides import Edited, with_sizes
from cuopt.spec.model import KernelSpec

if TYPE_CHECKING:
    from cuopt.targets import Target


@dataclass(frozen=True)
class Build:
    """One build: nvcc's settings, and the values its compile-time sizes are set to."""

    settings: CompileSettings
    sizes: tuple[tuple[str, int], ...] = ()

    def edited(self, source: str, path: Path) -> Edited:
        """`source` (a variant of the file `path`) with this build's sizes set in its definitions."""
        edited = with_sizes(source, path, self.settings.include_dirs, dict(self.sizes))
        missing = [n for n in edited.missing if n not in dict(self.settings.defines)]
        if missing:
            raise CompileError(f"size {missing[0]}: no `#define {missing[0]}` in {path.name} or the headers it "
                               f"includes to set it in")
        return edited

    def describe(self) -> str:
        return " ".join(f"{name}={value}" for name, value in self.sizes)


@dataclass(frozen=True)
class BuildPlan:
    """The builds of a kernel of the file `path`, and which build serves each size set (the timing
    sizes first (twice with a capture: its data, then random), then the check sizes, as
    `KernelSpec.size_sets` orders them)."""

    kernel: str
    builds: tuple[Build, ...]
    build_of: tuple[int, ...]  # size set index -> index into builds
    path: Path = Path("kernel.cu")

    @classmethod
    def of(cls, spec: KernelSpec, kernel: str, settings: CompileSettings,
           macro_sizes: frozenset[str] = frozenset(), path: Path = Path("kernel.cu")) -> BuildPlan:
        """One build when no size is a macro, else one per distinct value of the macro sizes: each
        sets them by editing their definitions, and by `-D` those the settings themselves define."""
        unknown = sorted(macro_sizes - set(spec.sizes))
        if unknown:
            raise CuoptError(f"{spec.where('sizes')}: macro size {unknown[0]!r} is not a size of the spec")
        index: dict[tuple[tuple[str, int], ...], int] = {}
        build_of = []
        for _, sizes in spec.size_sets():
            values = tuple((name, sizes[name]) for name in sorted(macro_sizes))
            build_of.append(index.setdefault(values, len(index)))
        user = dict(settings.defines)
        builds = tuple(Build(settings.defining({n: v for n, v in values if n in user}), values) for values in index)
        return cls(kernel, builds, tuple(build_of), path)

    def compile(self, source: str, arch: str) -> Compiled:
        """Every build of `source`; raises the first CompileError."""
        built: list[Compiled | CompileError] = []
        for build in self.builds:
            built.append(self._try(source, arch, build))
            if isinstance(built[-1], CompileError):
                break
        result = self.combine(built)
        if isinstance(result, CompileError):
            raise result
        return result

    def combine(self, built: list[Compiled | CompileError]) -> Compiled | CompileError:
        """One Compiled from the builds, in the order of `builds`: the timing size set's cubin, with
        the cubin of every size set in `sized` when there is more than one build."""
        for b, build in zip(built, self.builds):
            if isinstance(b, CompileError):
                if len(self.builds) == 1:
                    return b
                return CompileError(f"at {build.describe()}: {b}", b.log)
        if len(built) == 1:
            return built[0]
        per_set = tuple(built[i] for i in self.build_of)
        return replace(per_set[0], sized=per_set)  # type: ignore[arg-type]

    def job(self, source: str, build: Build) -> tuple[str, str, CompileSettings, tuple[tuple[str, str], ...]]:
        """What `compile_many` takes for one build of `source`."""
        edited = build.edited(source, self.path)
        return edited.source, self.kernel, build.settings, edited.files

    def _try(self, source: str, arch: str, build: Build) -> Compiled | CompileError:
        try:
            text, kernel, settings, files = self.job(source, build)
            return compile_kernel(text, kernel, arch=arch, settings=settings, files=files)
        except CompileError as exc:
            return exc


def plan_for(target: Target) -> BuildPlan:
    """The plan of a target: its resolved settings with its own directory searched first."""
    return BuildPlan.of(target.spec, target.kernel.entry, target.settings.searching(target.path.parent),
                        target.macro_sizes, target.path)


def compile_all(items: list[tuple[BuildPlan, str]], arch: str) -> list[Compiled | CompileError]:
    """Compile (plan, source) pairs, every build of every pair in parallel."""
    jobs: list = []
    for plan, source in items:
        for build in plan.builds:
            try:
                jobs.append(plan.job(source, build))
            except CompileError as exc:
                jobs.append(exc)
    pending = [j for j in jobs if not isinstance(j, CompileError)]
    done = iter(compile_many(pending, arch=arch))
    built = [j if isinstance(j, CompileError) else next(done) for j in jobs]
    out: list[Compiled | CompileError] = []
    start = 0
    for plan, _ in items:
        out.append(plan.combine(built[start:start + len(plan.builds)]))
        start += len(plan.builds)
    return out
