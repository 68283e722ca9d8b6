"""The kernel spec (`kernel.cuopt.toml`): how to launch a kernel, with what data, at what sizes.

Parsing checks everything that can be checked without the source; `bind` checks the spec
against the kernel's C signature; `instances` evaluates it at the timing and check sizes.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from cuopt.compile_settings import KEYS as COMPILE_KEYS
from cuopt.compile_settings import NO_SETTINGS, CompileSettings, from_table
from cuopt.errors import CuoptError
from cuopt.source.templates import TemplateError, parse_instantiation
from cuopt.spec import expr as E
from cuopt.spec.dtypes import DTYPES, FLOAT_TOLERANCE, check_randint, is_float

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROLES = ("in", "out", "inout")
INITS = {"uniform": 2, "normal": 2, "randint": 2, "zeros": 0, "ones": 0}
COMPILE_TABLE = "compile"  # the one top-level table that is not a kernel: the file's compile settings
KERNEL_KEYS = ("block", "grid", "shared", "sizes", "check_sizes", "tolerance", "flops", "seed", "fast_math", "args",
               "kernel", "aliased", "capture")
OPT_INS = {"fast_math": "fast-math"}  # spec key -> the rewrite option it turns on for the kernel
_BUFFER = re.compile(r"^\s*(?P<role>[a-z]+)\s+(?P<dtype>[a-z0-9]+)\s*\[(?P<count>[^\]]*)\]\s*(?P<init>.*?)\s*$")
_INIT = re.compile(r"^(?P<kind>[a-z]+)\s*(?:\((?P<args>.*)\))?$")


class SpecError(CuoptError):
    """A spec that is wrong; the message names file, kernel and key."""


@dataclass(frozen=True)
class Init:
    """How a buffer's contents are generated."""

    kind: str
    args: tuple[Union[float, E.Expr], ...] = ()

    def __str__(self) -> str:
        return f"{self.kind}({', '.join(str(a) for a in self.args)})" if self.args else self.kind


@dataclass(frozen=True)
class Buffer:
    name: str
    role: str  # in | out | inout
    dtype: str
    count: E.Expr
    init: Init | None  # None: the dtype's default

    def __str__(self) -> str:
        return f"{self.role} {self.dtype}[{self.count}]" + (f" {self.init}" if self.init else "")


@dataclass(frozen=True)
class Scalar:
    name: str
    value: Union[float, E.Expr]  # a float literal, or an integer expression


Arg = Union[Buffer, Scalar]


@dataclass(frozen=True)
class Launch:
    """Block dims (ints), grid dims (expressions over sizes and block.x|y|z), dynamic shared bytes."""

    block: tuple[int, ...]
    grid: tuple[E.Expr, ...]
    shared: E.Expr = E.Num(0)

    def env(self, sizes: dict[str, int]) -> dict[str, int]:
        b = self.block3
        return {**sizes, "block.x": b[0], "block.y": b[1], "block.z": b[2]}

    @property
    def block3(self) -> tuple[int, int, int]:
        return tuple(self.block) + (1,) * (3 - len(self.block))  # type: ignore[return-value]

    def grid3(self, sizes: dict[str, int]) -> tuple[int, int, int]:
        env = self.env(sizes)
        g = tuple(E.evaluate(e, env) for e in self.grid)
        return g + (1,) * (3 - len(g))  # type: ignore[return-value]

    def shared_bytes(self, sizes: dict[str, int]) -> int:
        return E.evaluate(self.shared, self.env(sizes))

    def describe(self) -> str:
        block = "x".join(str(b) for b in self.block)
        grid = ", ".join(str(g) for g in self.grid)
        shared = f", shared {self.shared}" if self.shared != E.Num(0) else ""
        return f"block {block}, grid ({grid}){shared}"


@dataclass(frozen=True)
class KernelSpec:
    name: str
    path: Path  # the spec file, for messages
    launch: Launch
    sizes: dict[str, int]
    check_sizes: tuple[dict[str, int], ...]
    check_sizes_derived: bool
    tolerance: tuple[float, float] | None
    flops: E.Expr | None
    seed: int
    args: tuple[Arg, ...]
    options: frozenset[str] = frozenset()  # opt-in rewrite options (OPT_INS) the spec turns on
    kernel: str = ""  # the kernel or template instantiation (`scale<float, 256>`); "": the table's name
    aliased: tuple[str, ...] = ()  # pointer parameters the program passes one buffer for (`f(x, x, ...)`)
    capture: str = ""  # the capture whose launch and data the table describes (a name or a path); "": none

    @property
    def entry(self) -> str:
        """What the table describes: its `kernel` key, else its name."""
        return self.kernel or self.name

    def where(self, key: str) -> str:
        return f"{self.path.name}: [{self.name}] {key}"

    def arg(self, name: str) -> Arg | None:
        return next((a for a in self.args if a.name == name), None)

    def size_sets(self) -> list[tuple[str, dict[str, int]]]:
        """The labelled size sets a kernel runs at, in order: with a capture, its data at the timing
        sizes first ("captured", the one timed), then the timing sizes on random data, then each
        check size."""
        captured = [("captured", self.sizes)] if self.capture else []
        return captured + [("timing", self.sizes)] + [(f"check {i + 1}", s) for i, s in enumerate(self.check_sizes)]


    def tolerance_for(self, dtype: str) -> tuple[float, float]:
        if not is_float(dtype):
            return (0.0, 0.0)
        return self.tolerance if self.tolerance is not None else FLOAT_TOLERANCE[dtype]


@dataclass(frozen=True)
class SpecFile:
    path: Path
    kernels: dict[str, KernelSpec] = field(default_factory=dict)
    settings: CompileSettings = NO_SETTINGS  # the [compile] table, paths resolved from the spec's directory


def spec_path_for(cu_path: Path) -> Path:
    """`saxpy.cu` -> `saxpy.cuopt.toml`, next to it."""
    return cu_path.with_name(cu_path.name.rsplit(".", 1)[0] + ".cuopt.toml")


def load(path: Path) -> SpecFile:
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise SpecError(f"{path}: no such spec file") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path.name}: not valid TOML: {exc}") from None
    return parse(raw, path)


def parse(raw: dict[str, Any], path: Path) -> SpecFile:
    kernels = {}
    settings = NO_SETTINGS
    for name, table in raw.items():
        if name == COMPILE_TABLE:
            settings = _compile(table, path)
            continue
        if not isinstance(table, dict):
            raise SpecError(f"{path.name}: top-level key {name!r} must be a table [{name}] describing a kernel")
        kernels[name] = _kernel(name, table, path)
    return SpecFile(path, kernels, settings)


def _compile(table: Any, path: Path) -> CompileSettings:
    """The `[compile]` table; a kernel table under that name is refused (the name is reserved)."""
    where = f"{path.name}: [{COMPILE_TABLE}]"
    if isinstance(table, dict) and any(key in KERNEL_KEYS for key in table):
        raise SpecError(f"{where}: this table holds compile settings ({', '.join(COMPILE_KEYS)}), not a kernel; "
                        f"describe a kernel named {COMPILE_TABLE!r} in a table of another name with "
                        f"kernel = \"{COMPILE_TABLE}\"")
    try:
        return from_table(table, path.parent, where)
    except CuoptError as exc:
        raise SpecError(str(exc)) from None


def _kernel(name: str, t: dict[str, Any], path: Path) -> KernelSpec:
    where = lambda key: f"{path.name}: [{name}] {key}"  # noqa: E731
    for key in t:
        if key not in KERNEL_KEYS:
            raise SpecError(f"{where(key)}: unknown key; expected one of: {', '.join(KERNEL_KEYS)}")
    for key in ("block", "grid", "sizes", "args"):
        if key not in t:
            raise SpecError(f"{where(key)}: missing; every kernel table needs block, grid, sizes and args")

    sizes = _sizes(t["sizes"], where("sizes"))
    block = _block(t["block"], where("block"))
    grid = _expr_list(t["grid"], where("grid"))
    shared = _expr(t.get("shared", 0), where("shared"))
    launch = Launch(block, grid, shared)

    if "check_sizes" in t:
        check = t["check_sizes"]
        if not isinstance(check, list) or not all(isinstance(c, dict) for c in check):
            raise SpecError(f"{where('check_sizes')}: expected a list of tables such as [{{ n = 1000003 }}]")
        checks = []
        for i, c in enumerate(check):
            extra = _sizes(c, where(f"check_sizes[{i}]"))
            unknown = set(extra) - set(sizes)
            if unknown:
                raise SpecError(f"{where(f'check_sizes[{i}]')}: unknown size name {sorted(unknown)[0]!r} "
                                f"(sizes defines: {', '.join(sizes)})")
            checks.append({**sizes, **extra})
        check_sizes, derived = tuple(checks), False
    else:
        check_sizes, derived = derive_check_sizes(sizes, block), True

    tolerance = None
    if "tolerance" in t:
        tol = t["tolerance"]
        if not isinstance(tol, dict) or set(tol) - {"rtol", "atol"} or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in tol.values()):
            raise SpecError(f"{where('tolerance')}: expected {{ rtol = <number >= 0>, atol = <number >= 0> }}")
        tolerance = (float(tol.get("rtol", 0.0)), float(tol.get("atol", 0.0)))
    seed = t.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise SpecError(f"{where('seed')}: expected a non-negative integer")
    flops = _expr(t["flops"], where("flops")) if "flops" in t else None
    options = _options(t, where)

    if not isinstance(t["args"], dict) or not t["args"]:
        raise SpecError(f"{where('args')}: expected a table [{name}.args] with one entry per kernel parameter")
    args = tuple(_arg(a, v, where(f"args.{a}")) for a, v in t["args"].items())

    kernel = _entry(t["kernel"], where("kernel")) if "kernel" in t else ""
    aliased = _aliased(t.get("aliased", []), {a.name for a in args if isinstance(a, Buffer)}, where("aliased"))
    capture = _capture(t.get("capture", ""), where("capture")) if "capture" in t else ""
    spec = KernelSpec(name, path, launch, sizes, check_sizes, derived, tolerance, flops, seed, args, options, kernel,
                      aliased, capture)
    _check_names(spec)
    return spec


def _aliased(value: Any, buffers: set[str], where: str) -> tuple[str, ...]:
    """The `aliased` key: buffer arguments the program passes the same memory for."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SpecError(f"{where}: expected a list of buffer argument names, e.g. [\"x\", \"y\"]")
    unknown = [v for v in value if v not in buffers]
    if unknown:
        raise SpecError(f"{where}: {unknown[0]!r} is not a buffer argument (buffers: {', '.join(sorted(buffers))})")
    return tuple(value)


def _capture(value: Any, where: str) -> str:
    """The `capture` key: a capture's name (under `.cuopt/captures/` next to the spec) or its directory,
    relative to the spec's."""
    if not isinstance(value, str) or not value.strip() or "\n" in value:
        raise SpecError(f"{where}: expected a capture's name, e.g. \"train\" (.cuopt/captures/train next to the "
                        "spec), or its directory relative to the spec's")
    return value.strip()


def _entry(value: Any, where: str) -> str:
    """The `kernel` key: a kernel name, or a template instantiation such as `scale<float, 256>`."""
    if not isinstance(value, str):
        raise SpecError(f"{where}: expected a kernel name or an instantiation such as \"scale<float, 256>\"")
    if "<" not in value:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", value.strip()):
            raise SpecError(f"{where}: {value!r} is not a kernel name; expected e.g. \"scale\" or "
                            "\"scale<float, 256>\"")
        return value.strip()
    try:
        return str(parse_instantiation(value))
    except TemplateError as exc:
        raise SpecError(f"{where}: {exc}") from None


def _options(t: dict[str, Any], where: Callable[[str], str]) -> frozenset[str]:
    """The rewrite options that opt-in keys such as `fast_math = true` turn on."""
    for key in OPT_INS:
        if key in t and not isinstance(t[key], bool):
            raise SpecError(f"{where(key)}: expected true or false, got {t[key]!r}")
    return frozenset(option for key, option in OPT_INS.items() if t.get(key))


def _sizes(value: Any, where: str) -> dict[str, int]:
    if not isinstance(value, dict):
        raise SpecError(f"{where}: expected a table of size names to positive integers, e.g. {{ n = 1048576 }}")
    out = {}
    for k, v in value.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", k):
            raise SpecError(f"{where}: {k!r} is not a valid size name (letters, digits, _)")
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0 or v > E.MAX_VALUE:
            raise SpecError(f"{where}.{k}: expected a positive integer, got {v!r}")
        out[k] = v
    return out


def _block(value: Any, where: str) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if (not isinstance(value, list) or not 1 <= len(value) <= 3
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)):
        raise SpecError(f"{where}: expected 1 to 3 positive integers, e.g. [256] or [16, 16]")
    threads = 1
    for v in value:
        threads *= v
    if threads > 1024:
        raise SpecError(f"{where}: {threads} threads per block; CUDA allows at most 1024")
    return tuple(value)


def _expr(value: Any, where: str) -> E.Expr:
    try:
        return E.parse(value)
    except E.ExprError as exc:
        raise SpecError(f"{where}: {exc}") from None


def _expr_list(value: Any, where: str) -> tuple[E.Expr, ...]:
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not 1 <= len(value) <= 3:
        raise SpecError(f"{where}: expected 1 to 3 expressions, e.g. [\"cdiv(n, block.x)\"]")
    return tuple(_expr(v, f"{where}[{i}]") for i, v in enumerate(value))


def _arg(name: str, value: Any, where: str) -> Arg:
    if isinstance(value, bool):
        raise SpecError(f"{where}: expected a number, a size expression or a buffer such as \"in float32[n]\"")
    if isinstance(value, float):
        return Scalar(name, value)
    if isinstance(value, int):
        return Scalar(name, _expr(value, where))
    if not isinstance(value, str):
        raise SpecError(f"{where}: expected a number, a size expression or a buffer such as \"in float32[n]\"")
    m = _BUFFER.match(value)
    if m is None or m.group("role") not in ROLES:
        if m is not None:
            raise SpecError(f"{where}: unknown buffer role {m.group('role')!r}; expected in, out or inout")
        return Scalar(name, _expr(value, where))
    dtype = m.group("dtype")
    if dtype not in DTYPES:
        raise SpecError(f"{where}: unknown dtype {dtype!r}; expected one of {', '.join(DTYPES)}")
    count = _expr(m.group("count"), where + " (element count)")
    init = _init(m.group("init"), dtype, where) if m.group("init") else None
    return Buffer(name, m.group("role"), dtype, count, init)


def _init(text: str, dtype: str, where: str) -> Init:
    m = _INIT.match(text)
    if m is None or m.group("kind") not in INITS:
        raise SpecError(f"{where}: unknown initializer {text!r}; expected uniform(lo,hi), normal(mean,std), "
                        "randint(lo,hi), zeros or ones")
    kind, arity = m.group("kind"), INITS[m.group("kind")]
    raw_args = [a.strip() for a in m.group("args").split(",")] if m.group("args") and m.group("args").strip() else []
    if len(raw_args) != arity:
        raise SpecError(f"{where}: {kind} takes {arity} arguments, got {len(raw_args)}")
    args: list[Union[float, E.Expr]] = []
    for a in raw_args:
        try:
            args.append(float(a))
        except ValueError:
            args.append(_expr(a, where + f" ({kind} argument)"))
    if kind in ("uniform", "normal") and not is_float(dtype):
        raise SpecError(f"{where}: {kind} needs a float dtype; use randint(lo,hi) for {dtype}")
    if kind == "randint" and all(isinstance(a, float) for a in args):
        problem = check_randint(dtype, float(args[0]), float(args[1]))
        if problem:
            raise SpecError(f"{where}: {problem}")
    return Init(kind, tuple(args))


def _check_names(spec: KernelSpec) -> None:
    known = set(spec.sizes)
    with_block = known | set(E.BLOCK_NAMES)
    checks: list[tuple[str, E.Expr, set[str]]] = [
        (f"grid[{i}]", g, with_block) for i, g in enumerate(spec.launch.grid)]
    checks.append(("shared", spec.launch.shared, with_block))
    if spec.flops is not None:
        checks.append(("flops", spec.flops, known))
    for a in spec.args:
        if isinstance(a, Buffer):
            checks.append((f"args.{a.name}", a.count, known))
            for x in (a.init.args if a.init else ()):
                if not isinstance(x, float):
                    checks.append((f"args.{a.name}", x, known))
        elif not isinstance(a.value, float):
            checks.append((f"args.{a.name}", a.value, known))
    for key, e, allowed in checks:
        unknown = sorted(E.names(e) - allowed)
        if unknown:
            hint = f"sizes defines: {', '.join(spec.sizes)}" if spec.sizes else "sizes is empty"
            raise SpecError(f"{spec.where(key)}: unknown size name {unknown[0]!r} ({hint})")


def derive_check_sizes(sizes: dict[str, int], block: tuple[int, ...]) -> tuple[dict[str, int], ...]:
    """Default check sizes: every size made odd (so not a multiple of 2, 4, 32) and not a multiple of
    any block dim, once at about a seventh of the timing size and once capped at 97."""
    def awkward(v: int) -> int:
        v = max(1, v) | 1
        while v > 1 and any(b > 1 and v % b == 0 for b in block):
            v += 2
        return v

    out: list[dict[str, int]] = []
    for shrink in (lambda v: v // 7, lambda v: min(v, 97)):
        candidate = {k: awkward(shrink(v)) for k, v in sizes.items()}
        if candidate not in out and candidate != sizes:
            out.append(candidate)
    return tuple(out)
