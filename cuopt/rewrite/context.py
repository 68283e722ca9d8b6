"""What a transform sees (a variant of one kernel) and what it returns."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import tree_sitter as ts

from cuopt.compile_settings import NO_SETTINGS, CompileSettings
from cuopt.errors import CuoptError
from cuopt.source.kernels import Kernel, SourceFile, load
from cuopt.source.model import KernelModel, analyze
from cuopt.source.preprocess import NO_MACROS, Macros
from cuopt.source.affine import Poly, poly_value
from cuopt.source.thread_roles import batch_axes
from cuopt.spec import expr as E
from cuopt.spec.model import KernelSpec, Launch, Scalar


class Refuse(Exception):
    """The rewrite does not apply here; the message says why (shown by `cuopt rewrites --why`)."""


class RewriteError(CuoptError):
    """A rewrite produced code that does not parse or changed the signature: a bug in the rule."""


@dataclass(frozen=True)
class Site:
    """Where a rule may apply: a node (its position names the action) and why it matters."""

    node: ts.Node
    note: str = ""  # what the rule noticed here, for `cuopt check` findings
    data: Any = None  # transform-private

    @property
    def line(self) -> int:
        return self.node.start_point.row + 1

    @property
    def column(self) -> int:
        return self.node.start_point.column + 1


@dataclass(frozen=True)
class Rewritten:
    source: bytes
    launch: Launch
    summary: str
    pins: tuple[str, ...] = ()  # types as written that the rewrite read as its instantiation's (`T`)


@dataclass
class Context:
    """One variant of one kernel: the whole file's source, its launch, and the spec if known."""

    source: bytes
    launch: Launch
    kernel_name: str
    spec: KernelSpec | None = None
    options: frozenset[str] = field(default_factory=frozenset)  # from the command line (--fast-math)
    macros: Macros = NO_MACROS  # the original file's, which its variants keep
    settings: CompileSettings = NO_SETTINGS  # the file's include directories and definitions
    given: Launch | None = None  # where the rules read the kernel under its lean launch: the launch as given

    @property
    def enabled_options(self) -> frozenset[str]:
        """The opt-in options in force: the command line's and the spec's (`fast_math = true`)."""
        return self.options | (self.spec.options if self.spec is not None else frozenset())

    @cached_property
    def file(self) -> SourceFile:
        return load(self.source, self.macros)

    @cached_property
    def kernel(self) -> Kernel:
        k = self.file.kernel(self.kernel_name)
        if k is None:
            raise Refuse(f"no kernel {self.kernel_name}")
        return k

    @cached_property
    def model(self) -> KernelModel:
        analyses = self.file.analyses  # kept with the parsed file, which load() shares per source
        if self.kernel.entry not in analyses:  # an instantiation's analysis knows its constants
            analyses[self.kernel.entry] = analyze(self.kernel)
        return analyses[self.kernel.entry]

    def text(self, node: ts.Node) -> str:
        return self.source[node.start_byte:node.end_byte].decode()

    def tie_value(self, name: str) -> int | None:
        """What the kernel takes for blockDim (a block tie's name, `TILE`) at the spec's sizes."""
        if self.spec is not None and name in self.spec.sizes:
            return self.spec.sizes[name]
        return self.model.tie_value(name)

    @cached_property
    def index_env(self) -> dict[str, int]:
        """Values for index symbols at the spec's sizes, for thread 0 of block 0: the scalar
        arguments, block and grid dimensions (empty of arguments without a spec)."""
        env = {f"{kind}.{axis}": 0 for kind in ("threadIdx", "blockIdx") for axis in "xyz"}
        return {**env, **self._uniform_env(self.spec.sizes if self.spec is not None else {})}

    @cached_property
    def size_envs(self) -> list[dict[str, int]]:
        """The values every thread shares (scalar arguments, block and grid dimensions) at each size
        set the evaluator runs the kernel at (the spec's timing and check sizes); empty without a spec."""
        envs = [self._uniform_env(sizes) for _, sizes in self.spec.size_sets()] if self.spec is not None else []
        return [env for i, env in enumerate(envs) if env not in envs[:i]]

    def _uniform_env(self, sizes: dict[str, int]) -> dict[str, int]:
        env = {f"blockDim.{axis}": n for axis, n in zip("xyz", self.launch.block3)}
        grid = [evaluate(g, self.launch.env(sizes)) for g in self.launch.grid]
        env.update({f"gridDim.{axis}": g for axis, g in zip("xyz", grid) if g is not None})
        for arg in self.spec.args if self.spec is not None else ():
            if isinstance(arg, Scalar) and not isinstance(arg.value, float):
                value = evaluate(arg.value, self.launch.env(sizes))
                if value is not None:
                    env[arg.name] = value
        return env

    def at_spec(self, p: Poly | None) -> int | None:
        """An index polynomial's value at the spec's sizes (thread 0 of block 0); None when unknown."""
        return poly_value(p, self.index_env)

    @property
    def dims(self) -> int:
        """How many block dimensions the launch uses (trailing 1s ignored)."""
        block = list(self.launch.block)
        while len(block) > 1 and block[-1] == 1 and len(self.launch.grid) < len(block):
            block.pop()
        return max(len(block), len(self.launch.grid))

    @property
    def batch_axes(self) -> tuple[int, ...]:
        """The launch's trailing grid axes that are batches of independent launches of the axes
        before them (cuopt/source/thread_roles.py): a rule keeps them as they are."""
        return batch_axes(self.launch, self.model.roles)

    @property
    def element_dims(self) -> int:
        """How many leading axes of the launch spread threads over elements: `dims` less the batch
        axes. A grid (cdiv(T, block.x), B * NH) whose blockIdx.y picks a slice has one."""
        batch = self.batch_axes
        return batch[0] if batch else self.dims


def evaluate(expr: E.Expr, env: dict[str, int]) -> int | None:
    """A spec expression's value in `env`; None when it does not evaluate."""
    try:
        return E.evaluate(expr, env)
    except (E.ExprError, ArithmeticError):
        return None


class Transform(Protocol):
    """A named Python transform: where it applies, and how."""

    def sites(self, ctx: Context, rule: Any) -> list[Site]: ...

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten: ...
