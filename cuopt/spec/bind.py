"""Check a spec against the kernel's C signature and evaluate it at concrete sizes."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Union

from cuopt.capture.manifest import CapturedLaunch, CaptureError, available
from cuopt.capture.match import check_layout, directory_of, launch_of, opened
from cuopt.source.kernels import Kernel, Param, SourceFile
from cuopt.source.templates import TemplateError, instantiations
from cuopt.spec import expr as E
from cuopt.spec.dtypes import check_randint, int_range, is_float, moved_bytes
from cuopt.spec.model import Buffer, Init, KernelSpec, Launch, Scalar, SpecError


@dataclass(frozen=True)
class BufferValue:
    name: str
    role: str
    dtype: str
    count: int
    init: tuple  # (kind, *numeric args)
    before: str | None = None  # a captured .npy file holding the initial contents (then `init` is not used)
    after: str | None = None  # a captured .npy file holding the expected contents after the launch
    span: int | None = None  # elements the spec counts when the buffer holds more (a captured allocation's rest)


@dataclass(frozen=True)
class ScalarValue:
    name: str
    dtype: str
    value: Union[int, float]


ArgValue = Union[BufferValue, ScalarValue]


@dataclass(frozen=True)
class Instance:
    """Everything needed to launch the kernel once: sizes, launch dims and argument values."""

    label: str  # "timing", "check 1", ...
    sizes: dict[str, int]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    args: tuple[ArgValue, ...]
    seed: int
    capture: str = ""  # the capture directory whose data the buffers hold; "": generated data

    @property
    def key(self) -> str:
        sizes = ",".join(f"{k}={v}" for k, v in sorted(self.sizes.items()))
        return sizes + (f";capture={self.capture}" if self.capture else f";seed={self.seed}")

    def bytes_moved(self) -> int:
        """Bytes the spec's buffers move (spec.dtypes.moved_bytes)."""
        return sum(moved_bytes(a.role, a.dtype, a.count if a.span is None else a.span)
                   for a in self.args if isinstance(a, BufferValue))


@dataclass(frozen=True)
class Bound:
    """A spec checked against its kernel: arguments in parameter order, each with its dtype."""

    spec: KernelSpec
    kernel_name: str
    params: tuple[tuple[str, str], ...]  # (name, dtype) in parameter order
    captured: CapturedLaunch | None = None  # the launch of the spec's capture
    capture_dir: str = ""

    def instances(self, launch: Launch | None = None, seed: int | None = None) -> list[Instance]:
        """One per size set (`KernelSpec.size_sets`): the timing instance first (the captured data's,
        when the spec names a capture), then one per check size."""
        launch = launch or self.spec.launch
        out = [self.instance(label, sizes, launch, seed) for label, sizes in self.spec.size_sets()]
        if self.captured is not None:
            out[0] = self.on_captured(out[0])
        return out

    def on_captured(self, inst: Instance) -> Instance:
        """`inst` with the captured launch's scalars and arrays. A buffer the capture left out keeps its
        generated contents, and is not compared with a captured output; when it is an input, no
        output is (they were computed from the contents left out)."""
        assert self.captured is not None
        whole = self.whole_inputs()
        values: list[ArgValue] = []
        for v in inst.args:
            a = self.captured.arg(v.name)
            assert a is not None
            if isinstance(v, ScalarValue):
                values.append(replace(v, value=float(a.value) if is_float(v.dtype) else a.value))
            elif a.before is not None:
                after = str(a.after) if a.after is not None and whole and v.role != "in" else None
                values.append(replace(v, count=a.count, before=str(a.before), after=after, span=min(v.count, a.count)))
            else:
                values.append(v)
        return replace(inst, args=tuple(values), capture=self.capture_dir)

    def whole_inputs(self) -> bool:
        """Whether the capture holds the contents of every buffer the kernel reads."""
        assert self.captured is not None
        return all(self.captured.arg(a.name).before is not None  # type: ignore[union-attr]
                   for a in self.spec.args if isinstance(a, Buffer) and a.role != "out")

    def instance(self, label: str, sizes: dict[str, int], launch: Launch, seed: int | None = None) -> Instance:
        spec = self.spec
        env = launch.env(sizes)
        try:
            grid = launch.grid3(sizes)
            shared = launch.shared_bytes(sizes)
        except E.ExprError as exc:
            raise SpecError(f"{spec.where('grid')}: {exc}") from None
        if any(g <= 0 for g in grid):
            raise SpecError(f"{spec.where('grid')}: evaluates to {grid} at sizes {sizes}; grid dims must be positive")
        values: list[ArgValue] = []
        for name, dtype in self.params:
            arg = spec.arg(name)
            assert arg is not None
            try:
                values.append(_value(arg, dtype, env))
            except E.ExprError as exc:
                raise SpecError(f"{spec.where('args.' + name)}: {exc}") from None
        return Instance(label, dict(sizes), grid, launch.block3, shared, tuple(values),
                        spec.seed if seed is None else seed)


def _value(arg: Buffer | Scalar, dtype: str, env: dict[str, int]) -> ArgValue:
    if isinstance(arg, Buffer):
        count = E.evaluate(arg.count, env)
        if count < 0:
            raise E.ExprError(f"element count evaluates to {count}")
        init = arg.init or default_init(arg.dtype)
        nums = tuple(a if isinstance(a, float) else float(E.evaluate(a, env)) for a in init.args)
        if init.kind == "randint":
            problem = check_randint(arg.dtype, nums[0], nums[1])
            if problem:
                raise E.ExprError(problem)
        return BufferValue(arg.name, arg.role, arg.dtype, count, (init.kind, *nums))
    value = arg.value if isinstance(arg.value, float) else E.evaluate(arg.value, env)
    if is_float(dtype):
        value = float(value)
    elif isinstance(value, float):
        raise E.ExprError(f"{value} is not an integer but the parameter is {dtype}")
    else:
        small, large = int_range(dtype)
        if not small <= value <= large:
            raise E.ExprError(f"{value} does not fit the parameter's type {dtype} ({small} to {large})")
    return ScalarValue(arg.name, dtype, value)



def default_init(dtype: str) -> Init:
    """How a buffer without an init is filled."""
    if is_float(dtype):
        return Init("uniform", (-1.0, 1.0))
    if dtype.startswith("uint"):
        return Init("randint", (0.0, 100.0))
    return Init("randint", (-100.0, 100.0))


def resolve(spec: KernelSpec, source: SourceFile, filename: str) -> Kernel:
    """The kernel a spec table describes in `source` (file `filename`): the table's `kernel` key or
    name, instantiated when it names a template instantiation; SpecError naming the key when the
    file has no such kernel or the instantiation does not fit."""
    where = spec.where("kernel") + ":" if spec.kernel else f"{spec.path.name}: [{spec.name}]"
    try:
        kernel = source.kernel(spec.entry)
    except TemplateError as exc:
        raise SpecError(f"{spec.where('kernel')}: {exc}") from None
    if kernel is None:
        names = ", ".join(k.name for k in source.kernels) or "none"
        raise SpecError(f"{where} names a kernel that {filename} does not define (__global__ kernels found: {names})")
    if kernel.template and kernel.instantiation is None:
        found = instantiations(source.tree.root_node, kernel.name)
        example = str(found[0][0]) if found else f"{kernel.name}<...>"
        raise SpecError(f"{spec.where('kernel')}: kernel {kernel.name} is a template; name its instantiation "
                        f"with kernel = \"{example}\"")
    return kernel


def bind(spec: KernelSpec, kernel: Kernel) -> Bound:
    """Check that the spec covers the kernel's parameters with matching types."""
    if kernel.template and kernel.instantiation is None:
        raise SpecError(f"{spec.where('kernel')}: kernel {kernel.name} is a template; name its instantiation "
                        f"with kernel = \"{kernel.name}<...>\"")
    names = {p.name for p in kernel.params}
    for a in spec.args:
        if a.name not in names:
            raise SpecError(f"{spec.where('args.' + a.name)}: kernel {kernel.name} has no parameter "
                            f"{a.name!r} (parameters: {', '.join(p.name for p in kernel.params)})")
    params = []
    for p in kernel.params:
        arg = spec.arg(p.name)
        if arg is None:
            raise SpecError(f"{spec.where('args')}: parameter {p.name!r} of kernel {kernel.name} "
                            f"(line {kernel.line}) is missing; add {p.name} = ... to [{spec.name}.args]")
        if p.ctype is None:
            raise SpecError(f"{spec.where('args.' + p.name)}: parameter type {_c_name(p)!r} is not supported; "
                            "expected a scalar or a pointer to float/double/half/int types")
        if p.pointer > 1:
            raise SpecError(f"{spec.where('args.' + p.name)}: pointer-to-pointer parameters are not supported")
        if p.pointer == 1:
            if not isinstance(arg, Buffer):
                raise SpecError(f"{spec.where('args.' + p.name)}: parameter is a pointer ({p.abi}); "
                                f"expected a buffer such as \"in {p.ctype.dtype}[n]\"")
            if arg.dtype != p.ctype.dtype:
                raise SpecError(f"{spec.where('args.' + p.name)}: dtype {arg.dtype} does not match the C type "
                                f"{_c_name(p)}; expected {p.ctype.dtype}")
            if p.const and arg.role != "in":
                raise SpecError(f"{spec.where('args.' + p.name)}: parameter is const ({p.abi}) so the kernel "
                                f"cannot write it; expected role 'in', got {arg.role!r}")
            params.append((p.name, arg.dtype))
        else:
            if isinstance(arg, Buffer):
                raise SpecError(f"{spec.where('args.' + p.name)}: parameter is a scalar ({_c_name(p)}); "
                                "expected a number or a size expression, not a buffer")
            if p.ctype.width != 1:
                raise SpecError(f"{spec.where('args.' + p.name)}: vector scalar parameters are not supported")
            if isinstance(arg.value, float) and not is_float(p.ctype.dtype):
                raise SpecError(f"{spec.where('args.' + p.name)}: {arg.value} is not an integer but the "
                                f"parameter is {_c_name(p)}")
            params.append((p.name, p.ctype.dtype))
    if not spec.capture:
        return Bound(spec, kernel.entry, tuple(params))
    return _with_capture(Bound(spec, kernel.entry, tuple(params)), kernel)


def _with_capture(bound: Bound, kernel: Kernel) -> Bound:
    """`bound` with its spec's capture: the kernel's first captured launch, whose arguments must fit the
    signature and whose integer scalars must be the spec's at the timing sizes (the captured data is
    the timing instance's)."""
    spec = bound.spec
    directory = directory_of(spec.capture, spec.path.parent)
    if not directory.is_dir():
        found = available(spec.path.parent)
        raise SpecError(f"{spec.where('capture')}: no capture {spec.capture!r} at {directory} (captures next to the "
                        f"spec: {', '.join(found) if found else 'none'})")
    try:
        capture = opened(directory)
        launch = launch_of(capture, kernel.entry)
        check_layout(capture, launch, kernel)
    except CaptureError as exc:
        raise SpecError(f"{spec.where('capture')}: {exc}") from None
    env = spec.launch.env(spec.sizes)
    for a in launch.args:
        arg = spec.arg(a.name)
        if isinstance(arg, Scalar) and not isinstance(arg.value, float) and not is_float(a.dtype):
            try:
                value = E.evaluate(arg.value, env)
            except E.ExprError:
                continue  # instances() says what is wrong with the expression
            if value != a.value:
                raise SpecError(f"{spec.where('args.' + a.name)}: {arg.value} = {value} at the sizes, but capture "
                                f"{spec.capture!r} launched {kernel.entry} with {a.name} = {a.value}; the captured "
                                "data is at the timing sizes: set sizes to the captured ones (or remove `capture`)")
    return replace(bound, captured=launch, capture_dir=str(directory.resolve()))


def unsupported(kernel: Kernel) -> str | None:
    """Why no spec can describe `kernel`: its first parameter of a type `bind` refuses; None when
    every parameter has a type a spec can pass. In a template not instantiated, a parameter whose
    type is a type parameter (`T* x`) waits for the instantiation; one of a class type such as
    `std::bool_constant<Atomic>` is refused whatever the arguments."""
    if kernel.template and kernel.instantiation is None and kernel.template_params is None:
        return None
    waiting = {t.name for t in kernel.template_params or () if t.kind == "type"} \
        if kernel.template and kernel.instantiation is None else set()
    for p in kernel.params:
        if p.base_type in waiting:
            continue
        if p.ctype is None:
            return f"parameter {p.name} has type {_c_name(p)!r}, which a spec cannot pass (it passes numbers and " \
                   "pointers to them)"
        if p.pointer > 1:
            return f"parameter {p.name} is a pointer to pointers, which a spec cannot pass"
        if not p.pointer and p.ctype.width != 1:
            return f"parameter {p.name} is a vector ({_c_name(p)}) passed by value, which a spec cannot pass"
    return None


def _c_name(p: Param) -> str:
    """The parameter's C element type: `float`, or `T (float)` in a template instantiation."""
    return f"{p.base_type} ({p.concrete})" if p.concrete else p.base_type
