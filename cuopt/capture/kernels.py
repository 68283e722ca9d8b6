"""The kernels a capture records, from the sources: which to choose, which parameters are pointers,
and which source kernel (and template instantiation) a captured mangled name is."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cuopt.errors import CuoptError
from cuopt.evaluate.demangle import instantiation_of
from cuopt.source.kernels import Kernel, Param, SourceFile
from cuopt.source.templates import TemplateError
from cuopt.spec.dtypes import itemsize

POINTER_BYTES = 8


@dataclass(frozen=True)
class Chosen:
    """A source kernel to capture."""

    path: Path
    source: SourceFile
    kernel: Kernel

    @property
    def pointers(self) -> tuple[int, ...]:
        """Indices of the parameters the source declares as pointers."""
        return tuple(i for i, p in enumerate(self.kernel.params) if p.pointer)


def choose(sources: dict[Path, SourceFile], names: list[str]) -> list[Chosen]:
    """The kernels named (every kernel of the sources when `names` is empty); CuoptError for a name
    that no source defines."""
    every = [Chosen(path, src, k) for path, src in sources.items() for k in src.kernels]
    if not names:
        if not every:
            raise CuoptError(f"no __global__ kernels in {', '.join(str(p) for p in sources)}")
        return every
    chosen = []
    for name in names:
        found = [c for c in every if c.kernel.name == name.split("<")[0].strip()]
        if not found:
            known = ", ".join(sorted({c.kernel.name for c in every})) or "none"
            raise CuoptError(f"--kernel {name}: no __global__ kernel of that name in "
                             f"{', '.join(str(p) for p in sources)} (found: {known})")
        chosen.extend(c for c in found if c not in chosen)
    return chosen


def environment_value(chosen: list[Chosen]) -> str:
    """CUOPT_CAPTURE_KERNELS for the injection library: `name=0,2;other=1`."""
    merged: dict[str, set[int]] = {}
    for c in chosen:
        merged.setdefault(c.kernel.name, set()).update(c.pointers)
    return ";".join(f"{name}={','.join(map(str, sorted(ptrs)))}" for name, ptrs in merged.items())


@dataclass(frozen=True)
class Resolved:
    """A captured mangled name as a source kernel: the instantiation for a template."""

    chosen: Chosen
    kernel: Kernel  # instantiated for a template kernel

    @property
    def entry(self) -> str:
        return self.kernel.entry


def resolve(mangled: str, demangled: str, param_count: int, chosen: list[Chosen]) -> Resolved:
    """The chosen kernel a launch of `mangled` ran; among overloads, the one with `param_count`
    parameters. CuoptError when none fits."""
    inst = instantiation_of(demangled)
    name = inst.name if inst is not None else demangled.split("(")[0].strip().split(" ")[-1].split("::")[-1]
    found = [c for c in chosen if c.kernel.name == name]
    if not found:
        raise CuoptError(f"captured kernel {demangled} is none of the chosen kernels")
    fitting = [c for c in found if len(c.kernel.params) == param_count] or found
    c = fitting[0]
    if inst is None:
        return Resolved(c, c.kernel)
    try:
        k = c.source.kernel(str(inst))
    except TemplateError as exc:
        raise CuoptError(f"{c.path}: kernel {c.kernel.name}: captured instantiation {inst}: {exc}") from None
    if k is None:
        raise CuoptError(f"{c.path}: kernel {c.kernel.name} is not a template, but the program ran {demangled}")
    return Resolved(c, k)


def expected_size(p: Param) -> int | None:
    """The bytes parameter `p` takes in the launch; None for a type a capture cannot describe."""
    if p.pointer:
        return POINTER_BYTES
    if p.ctype is None:
        return None
    return itemsize(p.ctype.dtype) * p.ctype.width


def check_layout(r: Resolved, sizes: list[int]) -> None:
    """CuoptError (one line, naming the kernel) when the driver's parameter layout does not match
    the source signature: another count, or a parameter of another size."""
    params = r.kernel.params
    where = f"{r.chosen.path}:{r.kernel.line}: kernel {r.entry}"
    if len(sizes) != len(params):
        raise CuoptError(f"{where}: the program's kernel takes {len(sizes)} parameters, the source's signature "
                         f"{len(params)}: the program was not built from this source")
    for p, size in zip(params, sizes):
        want = expected_size(p)
        if want is not None and want != size:
            raise CuoptError(f"{where}: parameter {p.name} ({p.abi}) is {size} bytes in the program, "
                             f"{want} in the source: the program was not built from this source")
