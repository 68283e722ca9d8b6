"""Spec tables from a capture: what `cuopt init` infers from the source, with the launch, sizes,
scalar values, buffer counts and roles the program used where the capture saw them. Where the
source's expression and the captured value disagree, the captured value is written and a line says so."""
from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from cuopt.capture.manifest import (Capture, CapturedArg, CapturedLaunch, CaptureError, captures_dir, check_source,
                                    load)
from cuopt.capture.match import arrays_left_out, check_layout
from cuopt.compile_settings import NO_SETTINGS, CompileSettings, resolve
from cuopt.source.affine import Poly, to_expr
from cuopt.source.cexpr import to_poly
from cuopt.source.kernels import Kernel, SourceFile
from cuopt.source.templates import TemplateError
from cuopt.spec import expr as E
from cuopt.spec.dtypes import is_float
from cuopt.spec.infer import AXES, Inferred, grid_ok, infer_all, infer_in_file, render, table_name
from cuopt.spec.model import COMPILE_TABLE, derive_check_sizes, spec_path_for
from cuopt.targets import default_instance, read_source
from cuopt.writeback import write_atomic

_BUFFER = re.compile(r"^(?P<role>in|out|inout) (?P<dtype>\w+)\[(?P<count>.*)\](?P<init>.*)$")
SEARCH_LIMIT = 2**31 - 1  # sizes solved for from the captured grid stay below this


@dataclass(frozen=True)
class FromCapture:
    """The spec text written from a capture, and what to say about it."""

    text: str
    kernels: int  # tables written
    todos: int  # TODO notes left (kernels the capture did not see)
    messages: list[str]  # one line each: captured values that win, kernels not captured, data left out


def from_capture(path: Path, source: SourceFile, capture: Capture, kernels: list[Kernel], spec_dir: Path,
                 say: Callable[[str], None]) -> FromCapture:
    """The spec text for `kernels` of `path` (parsed as `source`; kernels that do not parse are
    skipped, said through `say`): each kernel the capture launched (each captured instantiation of a
    template) from its first captured launch, the others as `cuopt init` infers them (a template by
    the instantiation given, else its first in the file). A capture of another version of the file,
    or whose arguments do not fit a kernel's signature, is a CaptureError (nothing is written)."""
    check_source(capture, path, source.source)
    mine = [la for la in capture.launches if la.ordinal == 0 and _same_file(capture, la.source, path)]
    chosen: list[tuple[Kernel, CapturedLaunch | None]] = []
    done: set[str] = set()  # templates whose captured instantiations are in
    for k in kernels:
        launches = [la for la in mine if la.kernel == k.name]
        if k.name in done:
            continue
        if k.errors or k.name == COMPILE_TABLE:
            say(f"{path}:{k.line}: kernel {k.name} skipped: " +
                ("it does not parse" if k.errors else "the name is reserved for the spec's [compile] table"))
            continue
        if not launches:
            instance = default_instance(source, k) if k.template and k.instantiation is None else k
            if instance is None:
                say(f"{path}:{k.line}: kernel {k.name} skipped: a template the file does not instantiate and the "
                    f"capture did not see launched")
            else:
                chosen.append((instance, None))
            continue
        done.add(k.name)
        for la in launches:
            try:
                kernel = source.kernel(la.entry)
            except TemplateError as exc:
                raise CaptureError(f"{capture.directory / 'manifest.json'}: {la.entry}: {exc}") from None
            if kernel is None:
                raise CaptureError(f"{capture.directory / 'manifest.json'}: {la.entry}: {path} has no such kernel "
                                   "or instantiation; the program was built from another version: capture again")
            check_layout(capture, la, kernel)
            chosen.append((kernel, la))
    defined = {k.name for k in source.kernels}
    messages = [f"{path}: capture {capture.name!r} launched {la.entry}, which the file does not define: left out"
                for la in mine if la.kernel not in defined]
    name = _reference(capture, spec_dir)
    inferred = dict(zip((k.entry for k, _ in chosen), infer_all(source.source, [k for k, _ in chosen])))
    tables: list[tuple[Kernel, Inferred]] = []
    for kernel, la in chosen:
        _, inf = inferred[kernel.entry]
        if la is None or inf.unsupported:
            if not inf.unsupported:
                messages.append(f"{path}: [{table_name(kernel)}] {kernel.entry} was not launched during capture "
                                f"{capture.name!r}: described from the source alone")
            tables.append((kernel, inf))
            continue
        said: list[str] = []
        tables.append((kernel, captured(kernel, inf, la, name, lambda s: said.append(s), source.source)))
        messages += [f"{path}: [{table_name(kernel)}] {line}" for line in said]
    text = render(tables, path.name)
    described = sum(1 for _, inf in tables if not inf.unsupported)
    return FromCapture(text, described, text.count("TODO:"), messages)


def _same_file(capture: Capture, source: str, path: Path) -> bool:
    return (capture.root / source).resolve() == path.resolve()


def _reference(capture: Capture, spec_dir: Path) -> str:
    """How a spec in `spec_dir` names the capture: its name when it lives next to the spec, else its
    directory relative to the spec's."""
    where = capture.directory.resolve()
    if where.parent == captures_dir(spec_dir).resolve():
        return capture.name
    try:
        relative = str(where.relative_to(spec_dir.resolve()))
    except ValueError:
        return str(where)
    return relative if "/" in relative else f"./{relative}"  # a bare name reads as one under .cuopt/captures


def captured(kernel: Kernel, inf: Inferred, launch: CapturedLaunch, name: str, say: Callable[[str], None],
             source: bytes) -> Inferred:
    """`inf` (what `source` gives) with the captured launch's block, grid, shared bytes, sizes,
    scalars, counts and roles, and the initial values the inference gives with those counts; a line
    through `say` for each captured value that replaces the source's, and for each buffer whose data
    the capture left out."""
    sizes = dict(inf.sizes)
    known = set(inf.given)
    consts = {p.name for p in kernel.params if p.const}
    for arg_name, value, _ in inf.args:  # a scalar passed as a size sets it
        a = launch.arg(arg_name)
        if a is None or a.buffer or is_float(a.dtype) or not isinstance(value, str) or value not in sizes:
            continue
        if a.value > 0 and (value not in inf.fixed or inf.fixed[value] == a.value):
            if value in known and sizes[value] != a.value:
                say(f"sizes.{value}: the source gives {sizes[value]}, the capture {a.value}: the captured value is "
                    "written")
            sizes[value] = a.value
            known.add(value)
    block = _block(launch, len(inf.grid))
    env = lambda: {**sizes, **{f"block.{AXES[i]}": b for i, b in enumerate(launch.block)}}  # noqa: E731
    _solve(sizes, known, inf, launch, env)

    args: list[tuple[str, str | float, str]] = []
    held: dict[str, E.Expr] = {}  # the captured buffers' counts, as written
    for arg_name, value, note in inf.args:
        a = launch.arg(arg_name)
        assert a is not None  # the layout matched
        if not a.buffer:
            args.append((arg_name, _scalar(arg_name, value, note, a, env(), known, say), ""))
            continue
        buffer = _buffer(arg_name, str(value), note, a, env(), arg_name not in consts, inf.strides.get(arg_name), say)
        args.append(buffer)
        if a.before is not None:
            held[arg_name] = E.parse(_parts(buffer[1])["count"])
    args = _inits(args, infer_in_file(source, kernel, held))  # the inference again, given those counts
    grid = _grid(inf.grid, launch, env(), sizes, say)
    shared = _shared(inf.shared, launch, env(), say)
    for a in arrays_left_out(launch):
        said = "its contents" if a.before is None else "its contents after the launch"
        say(f"args.{a.name}: the capture left {said} out ({a.omitted or 'no reason given'}): "
            f"{'random inputs stand in, and ' if a.before is None else ''}the captured output is not compared")
    used = _used(grid, shared, args)
    sizes = {k: v for k, v in sizes.items() if k in used or k in inf.fixed} or sizes
    guessed = set(sizes) - known
    notes = [n for n in inf.notes if any(n.startswith((f"size {s}:", f"{s} bounds")) for s in guessed)]
    free = {k: v for k, v in sizes.items() if k not in inf.fixed}
    derived = [{**c, **inf.fixed} for c in derive_check_sizes(free, tuple(block))] if free else []
    usable = [c for c in derived if grid_ok(grid, block, c)]
    check_sizes = None if usable == derived and not inf.fixed else (usable or [dict(sizes)])
    pinned, check_why = _pinned(inf, args, grid), ""
    if pinned and derived:
        check_sizes = [dict(sizes)]
        numbers = "is the capture's number" if len(pinned) == 1 else "are the capture's numbers"
        check_why = f"{', '.join(pinned)} {numbers}, which no expression of the sizes gives: checked at the " \
                    "captured sizes only"
        say(f"check_sizes: {check_why}")
    return replace(inf, block=block, grid=grid, sizes=sizes, args=args, notes=notes, check_sizes=check_sizes,
                   given=set(sizes) - guessed, launch_line=None, shared=shared, capture=name, check_why=check_why)


def _pinned(inf: Inferred, args: list[tuple[str, str | float, str]], grid: list[str]) -> list[str]:
    """The buffer counts and grid axes written as the capture's plain numbers where the source gives
    something else (an expression, or nothing it could follow): at other sizes they would stay
    while the sizes change, so the kernel would read past a buffer or leave part of its grid out."""
    source = {name: str(value) for name, value, _ in inf.args}
    out = [f"args.{name} ({_parts(str(value))['count']} elements)" for name, value, _ in args
           if name in source and isinstance(value, str) and _BUFFER.match(value)
           and _parts(value)["count"].isdigit() and _parts(source[name])["count"] != _parts(value)["count"]]
    out += [f"grid[{axis}] ({g})" for axis, g in enumerate(grid)
            if g.isdigit() and g != "1" and (axis >= len(inf.grid) or inf.grid[axis] != g)]
    return out


def _block(launch: CapturedLaunch, axes: int) -> list[int]:
    """The captured block over the launch's axes: as many as the source's grid has, or the captured
    grid or block uses."""
    used = max([axes, *(i + 1 for i in range(3) if launch.grid[i] > 1 or launch.block[i] > 1)])
    return list(launch.block[:used])


def _scalar(name: str, value: str | float, note: str, a: CapturedArg, env: dict[str, int], known: set[str],
            say: Callable[[str], None]) -> str | float:
    """A scalar argument: the source's expression where it evaluates to the captured value, else that
    value (said when the source's value was not a guess)."""
    if is_float(a.dtype):
        got = _shortest(float(a.value), a.dtype)
        if isinstance(value, float) and not note and _shortest(value, a.dtype) != got:
            say(f"args.{name}: the source gives {value}, the capture {got}: the captured value is written")
        return got
    if isinstance(value, str):
        try:
            if E.evaluate(E.parse(value), env) == a.value:
                return value
            if E.names(E.parse(value)) <= known:
                    say(f"args.{name}: the source gives {value} = {E.evaluate(E.parse(value), env)}, the capture "
                    f"{a.value}: the captured value is written")
        except E.ExprError:
            pass
    return str(a.value)


def _shortest(value: float, dtype: str) -> float:
    """`value` as the kernel's parameter holds it, written with the fewest digits that give it back."""
    return float(str(np.dtype(dtype).type(value))) if dtype in ("float16", "float32") else value


def _buffer(name: str, value: str, note: str, a: CapturedArg, env: dict[str, int], writable: bool,
            stride: str | None, say: Callable[[str], None]) -> tuple[str, str, str]:
    """A buffer argument: the source's count where the captured array covers it (the array runs to
    the end of the allocation), else the captured count (as sizes where it is their one product or
    a whole number of the `stride` values indexing it step by); inout where the source reads it as
    an input but the launch changed it. Its init and TODO come from `_inits`."""
    m = _parts(value)
    role, count, init = m.group("role"), m.group("count"), m.group("init")
    if a.before is None:  # nothing captured to size or compare it by: the source's reading stays
        return name, value, note
    try:
        reach = E.evaluate(E.parse(count), env)
    except E.ExprError:
        reach = None
    if note or reach is None or reach > a.count or reach <= 0:
        if reach is not None and not note:
            say(f"args.{name}: the source gives {count} = {reach} elements, the capture's allocation holds "
                f"{a.count} from the pointer on: the captured count is written")
        count = _product(a.count, {k: v for k, v in env.items() if not k.startswith("block.")}) or \
            _multiple(a.count, stride, env) or str(a.count)
    if role == "in" and writable and a.after is not None and _changed(a):
        say(f"args.{name}: the source reads it only, but the launch changed it: written as inout")
        role = "inout"
    return name, f"{role} {a.dtype}[{count}]{init}", ""


def _product(count: int, sizes: dict[str, int]) -> str | None:
    """The one product of up to three sizes (a size may repeat) that is `count`, fewest factors first
    (`B*C*T` for a 13824-element buffer at B=4, T=48, C=72); None when there is none or more than one."""
    names = sorted(k for k, v in sizes.items() if v > 1)
    for factors in (1, 2, 3):
        found = ["*".join(c) for c in itertools.combinations_with_replacement(names, factors)
                 if math.prod(sizes[n] for n in c) == count]
        if found:
            return found[0] if len(found) == 1 else None
    return None


def _multiple(count: int, stride: str | None, env: dict[str, int]) -> str | None:
    """`count` as a whole number of `stride` (`200*C` for 14400 elements at C=72): a table of rows that
    values read from another buffer pick, which keeps as many rows at every size; else None."""
    step = _value(stride, env)
    if stride is None or step is None or step <= 1 or count % step:  # no stride, or not whole rows of it
        return None
    return to_expr(to_poly(E.parse(stride)) * Poly.const(count // step))


def _inits(args: list[tuple[str, str | float, str]], again: Inferred) -> list[tuple[str, str | float, str]]:
    """`args` with each buffer's init and TODO as `again` (the inference given the captured counts)
    has them: values that index a captured buffer kept within its count, or the TODO saying no
    init could be found that does."""
    out = []
    for (name, value, note), (other, inferred, todo) in zip(args, again.args, strict=True):
        assert name == other, (name, other)
        if not isinstance(value, str) or _BUFFER.match(value) is None:  # a scalar
            out.append((name, value, note))
            continue
        m, init = _parts(value), _parts(str(inferred))["init"]
        out.append((name, f"{m['role']} {m['dtype']}[{m['count']}]{init}", todo))
    return out


def _parts(value: str) -> re.Match[str]:
    """A buffer argument's role, dtype, count and init."""
    m = _BUFFER.match(value)
    assert m is not None, value
    return m


def _changed(a: CapturedArg) -> bool:
    before, after = (np.load(p, mmap_mode="r", allow_pickle=False) for p in (a.before, a.after))  # type: ignore[arg-type]
    return before.tobytes() != after.tobytes()


def _grid(source: list[str], launch: CapturedLaunch, env: dict[str, int], sizes: dict[str, int],
          say: Callable[[str], None]) -> list[str]:
    """Per axis, the source's expression where it gives the captured grid, else the one size of that
    value, else the captured number."""
    axes = max(len(source), max((i + 1 for i in range(3) if launch.grid[i] > 1), default=1))
    out = []
    for axis in range(axes):
        want = launch.grid[axis]
        expr = source[axis] if axis < len(source) else None
        got = _value(expr, env)
        if got == want:
            out.append(expr)  # type: ignore[arg-type]
            continue
        named = [k for k, v in sizes.items() if v == want] if want > 1 else []
        written = named[0] if len(named) == 1 else str(want)  # `grid.y = B * NH` over a kernel sized by rows
        if got is not None:
            gives = expr if expr == str(got) else f"{expr} = {got}"
            also = f" (the size {written})" if named and written == named[0] else ""
            say(f"grid[{axis}]: the source gives {gives}, the capture {want}{also}: the captured grid is written")
        out.append(written)
    return out


def _shared(source: str | None, launch: CapturedLaunch, env: dict[str, int], say: Callable[[str], None]) -> str | None:
    got = _value(source, env)
    if got == launch.shared:
        return source
    if got is not None:
        say(f"shared: the source gives {source} = {got} bytes, the capture {launch.shared}: the captured value is "
            "written")
    return str(launch.shared) if launch.shared or source is not None else None


def _value(text: str | None, env: dict[str, int]) -> int | None:
    if text is None:
        return None
    try:
        return E.evaluate(E.parse(text), env)
    except E.ExprError:
        return None


def _solve(sizes: dict[str, int], known: set[str], inf: Inferred, launch: CapturedLaunch,
           env: Callable[[], dict[str, int]]) -> None:
    """Sizes still guessed that a grid axis depends on alone: the largest value that gives the captured grid."""
    for axis, text in enumerate(inf.grid[:3]):
        try:
            expr = E.parse(text)
        except E.ExprError:
            continue
        unknown = [n for n in E.names(expr) if n in sizes and n not in known]
        if len(unknown) != 1:
            continue
        name, want = unknown[0], launch.grid[axis]

        def at(v: int) -> int:
            return E.evaluate(expr, {**env(), name: v})

        lo, hi = 1, SEARCH_LIMIT
        try:
            if at(lo) > want:
                continue
            while lo < hi:  # the largest value whose grid is at most the captured one
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if at(mid) <= want else (lo, mid - 1)
            if at(lo) == want:
                sizes[name] = lo
                known.add(name)
        except E.ExprError:
            continue


def _used(grid: list[str], shared: str | None, args: list[tuple[str, str | float, str]]) -> set[str]:
    """The size names the table's expressions use."""
    used: set[str] = set()
    texts = [*grid, shared or "0"]
    for _, value, _ in args:
        if isinstance(value, str):
            m = _BUFFER.match(value)
            texts.append(m.group("count") if m else value)
    for t in texts:
        try:
            used |= E.names(E.parse(t))
        except E.ExprError:
            continue
    return used


def specs_from_capture(capture_dir: Path, sources: list[Path], *, force: bool = False,
                       say: Callable[[str], None] = lambda s: None,
                       settings: CompileSettings = NO_SETTINGS) -> list[tuple[Path, FromCapture]]:
    """Write the spec of each of `sources` from the capture in `capture_dir` (next to each source, as
    `cuopt init --from-capture` does), with a `[compile]` table for the command line's `settings`.
    All specs are worked out before any is written: a problem with one (an existing spec without
    `force`, a capture of another version, no kernel described) writes none."""
    capture = load(capture_dir)
    out = []
    for path in sources:
        spec_path = spec_path_for(path)
        if spec_path.exists() and not force:
            raise CaptureError(f"{spec_path}: already exists; pass --force to overwrite it")
        source = read_source(path, resolve(path, NO_SETTINGS, settings))
        made = from_capture(path, source, capture, list(source.kernels), spec_path.parent, say)
        if not made.kernels:
            raise CaptureError(f"{path}: no kernel could be described")
        out.append((spec_path, replace(made, text=settings.in_spec(made.text, spec_path.parent))))
    for spec_path, made in out:
        write_atomic(spec_path, made.text.encode())
    return out
