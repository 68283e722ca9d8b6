"""bind(): a spec checked against the kernel's C signature; Bound.instances(): concrete launches."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cuopt.source.kernels import Kernel, load
from cuopt.spec.bind import Bound, BufferValue, ScalarValue, bind, resolve, unsupported
from cuopt.spec.model import KernelSpec, SpecError, parse

from tests.conftest import SAMPLES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HEADER = """\
[k]
block = [256]
grid = ["cdiv(n, block.x)"]
sizes = { n = 1000 }
"""


def kernel_of(cuda: str, name: str = "k") -> Kernel:
    k = load(cuda).kernel(name)
    assert k is not None, f"no kernel {name} in {cuda!r}"
    return k


def spec_of(args: str, header: str = HEADER) -> KernelSpec:
    return parse(tomllib.loads(f"{header}\n[k.args]\n{args}\n"), Path("k.cuopt.toml")).kernels["k"]


def bind_text(cuda: str, args: str, header: str = HEADER) -> Bound:
    return bind(spec_of(args, header), kernel_of(cuda))


def bind_error(cuda: str, args: str, header: str = HEADER) -> str:
    with pytest.raises(SpecError) as exc:
        bind_text(cuda, args, header)
    return str(exc.value)


# -- signatures -----------------------------------------------------------------------------------
def test_saxpy_sample_binds_in_parameter_order() -> None:
    from cuopt.spec.model import load as load_spec

    spec = load_spec(SAMPLES / "saxpy.cuopt.toml").kernels["saxpy"]
    kernel = load((SAMPLES / "saxpy.cu").read_bytes()).kernel("saxpy")
    assert kernel is not None
    bound = bind(spec, kernel)
    assert bound.kernel_name == "saxpy"
    assert bound.params == (("n", "int32"), ("a", "float32"), ("x", "float32"), ("y", "float32"))


def test_params_follow_the_kernel_not_the_spec_order() -> None:
    bound = bind_text("__global__ void k(float* y, int n, const float* x) {}",
                      'x = "in float32[n]"\nn = "n"\ny = "out float32[n]"')
    assert [p[0] for p in bound.params] == ["y", "n", "x"]
    inst = bound.instances()[0]
    assert [a.name for a in inst.args] == ["y", "n", "x"]


def test_missing_parameter_says_which_and_how_to_add_it() -> None:
    msg = bind_error("__global__ void k(int n, const float* x, float* y) {}", 'n = "n"\nx = "in float32[n]"')
    assert msg == ("k.cuopt.toml: [k] args: parameter 'y' of kernel k (line 1) is missing; "
                   "add y = ... to [k.args]")


def test_missing_parameter_line_number() -> None:
    msg = bind_error("// comment\n\n__global__ void k(int n, float* y) {}", 'n = "n"')
    assert "(line 3)" in msg and "'y'" in msg


def test_extra_arg_names_the_parameters() -> None:
    msg = bind_error("__global__ void k(int n, const float* x) {}",
                     'n = "n"\nx = "in float32[n]"\nz = "in float32[n]"')
    assert msg == "k.cuopt.toml: [k] args.z: kernel k has no parameter 'z' (parameters: n, x)"


def test_pointer_given_a_scalar() -> None:
    msg = bind_error("__global__ void k(int n, const float* x) {}", 'n = "n"\nx = 1.0')
    assert msg == ('k.cuopt.toml: [k] args.x: parameter is a pointer (const float*); '
                   'expected a buffer such as "in float32[n]"')


def test_pointer_given_a_size_expression() -> None:
    msg = bind_error("__global__ void k(int n, double* x) {}", 'n = "n"\nx = "n"')
    assert msg.startswith("k.cuopt.toml: [k] args.x: parameter is a pointer (double*)")
    assert '"in float64[n]"' in msg


def test_scalar_given_a_buffer() -> None:
    msg = bind_error("__global__ void k(int n, const float* x) {}", 'n = "in int32[n]"\nx = "in float32[n]"')
    assert msg == ("k.cuopt.toml: [k] args.n: parameter is a scalar (int); "
                   "expected a number or a size expression, not a buffer")


@pytest.mark.parametrize("ctype, given, expected", [
    ("double", "float32", "float64"),
    ("float", "float64", "float32"),
    ("int", "uint32", "int32"),
    ("unsigned char", "int8", "uint8"),
    ("__half", "float32", "float16"),
    ("__nv_bfloat16", "float16", "bfloat16"),
    ("long long", "int32", "int64"),
])
def test_dtype_mismatch_names_the_expected_dtype(ctype: str, given: str, expected: str) -> None:
    msg = bind_error(f"__global__ void k(int n, {ctype}* x) {{}}", f'n = "n"\nx = "inout {given}[n]"')
    assert msg == (f"k.cuopt.toml: [k] args.x: dtype {given} does not match the C type {ctype}; "
                   f"expected {expected}")


@pytest.mark.parametrize("decl", ["const float* x", "float const* x", "const float* __restrict__ x",
                                  "const float* const x"])
@pytest.mark.parametrize("role", ["out", "inout"])
def test_const_pointer_must_be_an_input(decl: str, role: str) -> None:
    msg = bind_error(f"__global__ void k(int n, {decl}) {{}}", f'n = "n"\nx = "{role} float32[n]"')
    assert msg.startswith("k.cuopt.toml: [k] args.x: parameter is const (const float*)")
    assert msg.endswith(f"expected role 'in', got '{role}'")


def test_const_pointer_itself_may_be_written_through() -> None:
    """`float* const x`: the pointer is const, the data is not."""
    bound = bind_text("__global__ void k(int n, float* const x) {}", 'n = "n"\nx = "out float32[n]"')
    assert bound.params == (("n", "int32"), ("x", "float32"))


def test_float_literal_for_an_int_parameter() -> None:
    msg = bind_error("__global__ void k(int n, float a) {}", "n = 2.5\na = 1.0")
    assert msg == "k.cuopt.toml: [k] args.n: 2.5 is not an integer but the parameter is int"


def test_integer_for_a_float_parameter_is_fine() -> None:
    bound = bind_text("__global__ void k(int n, float a) {}", 'n = "n"\na = 3')
    value = bound.instances()[0].args[1]
    assert value == ScalarValue("a", "float32", 3.0) and isinstance(value.value, float)


def test_template_kernel_without_instantiation_is_refused() -> None:
    msg = bind_error("template <typename T>\n__global__ void k(int n, T* x) {}", 'n = "n"\nx = "in float32[n]"')
    assert msg == 'k.cuopt.toml: [k] kernel: kernel k is a template; name its instantiation with kernel = "k<...>"'


TEMPLATE = """\
template <typename T, int BLOCK>
__global__ void scale(T* out, const T* in, T a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < BLOCK; k += 32) { }
    if (i < n) out[i] = a * in[i];
}
void run(double* o, const double* x, int n) { scale<double, 128><<<(n + 127) / 128, 128>>>(o, x, 2.0, n); }
"""
TEMPLATE_ARGS = 'out = "out float32[n]"\nin = "in float32[n]"\na = 2.0\nn = "n"'


def template_spec(kernel: str, args: str = TEMPLATE_ARGS) -> KernelSpec:
    header = HEADER.replace("[k]", f'[k]\nkernel = "{kernel}"')
    return spec_of(args, header)


def test_instantiation_types_the_parameters() -> None:
    spec = template_spec("scale<float, 256>")
    bound = bind(spec, resolve(spec, load(TEMPLATE), "k.cu"))
    assert bound.kernel_name == "scale<float, 256>"
    assert bound.params == (("out", "float32"), ("in", "float32"), ("a", "float32"), ("n", "int32"))


def test_instantiation_dtype_mismatch_names_the_template_type() -> None:
    spec = template_spec("scale<double, 128>")
    with pytest.raises(SpecError) as exc:
        bind(spec, resolve(spec, load(TEMPLATE), "k.cu"))
    assert str(exc.value) == ("k.cuopt.toml: [k] args.out: dtype float32 does not match the C type T (double); "
                              "expected float64")


@pytest.mark.parametrize("kernel, message", [
    ("scale<float>", "k.cuopt.toml: [k] kernel: scale<float> gives 1 template argument; scale takes 2 "
                     "(typename T, value BLOCK)"),
    ("scale<256, float>", "k.cuopt.toml: [k] kernel: template argument 1 of scale<256, float> (256) must be a "
                          "type for typename T"),
    ("nope<float, 2>", "k.cuopt.toml: [k] kernel: names a kernel that k.cu does not define "
                       "(__global__ kernels found: scale, plain)"),
    ("plain<float>", "k.cuopt.toml: [k] kernel: kernel plain is not a template; name it without template "
                     "arguments"),
    ("scale", 'k.cuopt.toml: [k] kernel: kernel scale is a template; name its instantiation with '
              'kernel = "scale<double, 128>"'),
])
def test_instantiation_errors(kernel: str, message: str) -> None:
    spec = template_spec(kernel)
    with pytest.raises(SpecError) as exc:
        resolve(spec, load(TEMPLATE + "__global__ void plain(float* x) {}\n"), "k.cu")
    assert str(exc.value) == message


def test_table_name_is_the_kernel_without_the_key() -> None:
    spec = spec_of('x = "in float32[n]"')
    assert resolve(spec, load("__global__ void k(const float* x) {}"), "k.cu").name == "k"


@pytest.mark.parametrize("ctype, dtype", [
    ("unsigned char", "uint8"), ("uint8_t", "uint8"), ("signed char", "int8"), ("bool", "uint8"),
    ("float4", "float32"), ("float2", "float32"), ("int4", "int32"), ("uchar4", "uint8"),
    ("double2", "float64"), ("__half", "float16"), ("half", "float16"), ("half2", "float16"),
    ("__nv_bfloat16", "bfloat16"), ("nv_bfloat16", "bfloat16"), ("__nv_bfloat162", "bfloat16"),
    ("nv_bfloat162", "bfloat16"), ("unsigned int", "uint32"), ("size_t", "uint64"), ("long long", "int64"), ("short", "int16"),
])
def test_c_pointer_types_map_to_dtypes(ctype: str, dtype: str) -> None:
    bound = bind_text(f"__global__ void k(int n, {ctype}* x) {{}}", f'n = "n"\nx = "inout {dtype}[n]"')
    assert bound.params[1] == ("x", dtype)


@pytest.mark.parametrize("ctype, dtype", [("size_t", "uint64"), ("unsigned", "uint32"), ("long", "int64"),
                                          ("double", "float64"), ("short", "int16"), ("__nv_bfloat16", "bfloat16")])
def test_c_scalar_types_map_to_dtypes(ctype: str, dtype: str) -> None:
    bound = bind_text(f"__global__ void k({ctype} n, float* x) {{}}", 'n = "n"\nx = "out float32[n]"')
    assert bound.params[0] == ("n", dtype)


def test_vector_scalar_is_refused() -> None:
    msg = bind_error("__global__ void k(int n, float2 v) {}", 'n = "n"\nv = 1.0')
    assert msg == "k.cuopt.toml: [k] args.v: vector scalar parameters are not supported"


def test_pointer_to_pointer_is_refused() -> None:
    msg = bind_error("__global__ void k(int n, float** x) {}", 'n = "n"\nx = "in float32[n]"')
    assert msg == "k.cuopt.toml: [k] args.x: pointer-to-pointer parameters are not supported"


def test_struct_pointer_is_refused() -> None:
    msg = bind_error("struct S { int a; };\n__global__ void k(int n, S* x) {}", 'n = "n"\nx = "in float32[n]"')
    assert msg.startswith("k.cuopt.toml: [k] args.x: parameter type 'S' is not supported")


def test_kernels_in_namespaces_and_extern_c_bind() -> None:
    for cuda in ('extern "C" __global__ void k(int n, const float* x) {}',
                 "namespace ns { __global__ void k(int n, const float* x) {} }"):
        assert bind_text(cuda, 'n = "n"\nx = "in float32[n]"').params == (("n", "int32"), ("x", "float32"))


def test_array_parameter_is_a_pointer() -> None:
    """`float x[]` is `float* x` in C++ (nvcc mangles it as Pf); it must take a buffer."""
    bound = bind_text("__global__ void k(int n, float x[]) { x[0] = n; }", 'n = "n"\nx = "out float32[n]"')
    assert bound.params == (("n", "int32"), ("x", "float32"))


def test_reference_parameter_is_not_silently_dropped() -> None:
    """nvcc accepts `float& x` in a kernel; a spec that does not describe x must not bind, since
    the launch would then pass one argument fewer than the kernel takes."""
    with pytest.raises(SpecError, match="'x'"):
        bind_text("__global__ void k(int n, float& x) { x = n; }", 'n = "n"')


# -- instances --------------------------------------------------------------------------------------
SAXPY = "__global__ void k(int n, float a, const float* x, float* y) {}"
SAXPY_ARGS = 'n = "n"\na = 2.5\nx = "in float32[n]"\ny = "inout float32[n]"'


def test_instances_timing_first_then_checks() -> None:
    header = HEADER.replace("sizes = { n = 1000 }", "sizes = { n = 1000 }\ncheck_sizes = [{ n = 33 }, { n = 7 }]")
    insts = bind_text(SAXPY, SAXPY_ARGS, header).instances()
    assert [i.label for i in insts] == ["timing", "check 1", "check 2"]
    assert [i.sizes for i in insts] == [{"n": 1000}, {"n": 33}, {"n": 7}]
    assert [i.grid for i in insts] == [(4, 1, 1), (1, 1, 1), (1, 1, 1)]
    assert all(i.block == (256, 1, 1) for i in insts)
    n, a, x, y = insts[1].args
    assert n == ScalarValue("n", "int32", 33)
    assert a == ScalarValue("a", "float32", 2.5)
    assert x == BufferValue("x", "in", "float32", 33, ("uniform", -1.0, 1.0))
    assert y == BufferValue("y", "inout", "float32", 33, ("uniform", -1.0, 1.0))


def test_derived_check_sizes_become_instances() -> None:
    insts = bind_text(SAXPY, SAXPY_ARGS).instances()
    assert insts[0].label == "timing" and insts[0].sizes == {"n": 1000}
    assert len(insts) >= 2
    assert all(i.sizes["n"] % 2 == 1 for i in insts[1:])


def test_grid_is_evaluated_with_the_block() -> None:
    header = ('[k]\nblock = [16, 8]\ngrid = ["cdiv(w, block.x)", "cdiv(h, block.y)"]\n'
              'sizes = { w = 100, h = 50 }\nshared = "block.x * block.y * 4"\n')
    bound = bind_text("__global__ void k(int w, int h, float* out) {}", 'w = "w"\nh = "h"\nout = "out float32[w*h]"',
                      header)
    inst = bound.instances()[0]
    assert inst.grid == (7, 7, 1)
    assert inst.block == (16, 8, 1)
    assert inst.shared == 512


def test_another_launch_changes_grid_but_not_sizes() -> None:
    from cuopt.spec.model import Launch
    from cuopt.spec import expr as E

    bound = bind_text(SAXPY, SAXPY_ARGS)
    launch = Launch((128,), (E.parse("cdiv(n, block.x * 2)"),))
    inst = bound.instances(launch)[0]
    assert inst.block == (128, 1, 1)
    assert inst.grid == (4, 1, 1)  # cdiv(1000, 256)
    assert inst.sizes == {"n": 1000}


def test_bytes_moved_counts_inout_twice() -> None:
    bound = bind_text("__global__ void k(int n, const float* x, double* y, unsigned char* z) {}",
                      'n = "n"\nx = "in float32[n]"\ny = "inout float64[n]"\nz = "out uint8[2*n]"')
    inst = bound.instances()[0]
    assert inst.bytes_moved() == 1000 * 4 + 2 * 1000 * 8 + 2000 * 1


def test_bf16_buffers_move_two_bytes_an_element() -> None:
    bound = bind_text("__global__ void k(int n, const __nv_bfloat16* x, nv_bfloat16* y, float* s) {}",
                      'n = "n"\nx = "in bfloat16[n]"\ny = "inout bfloat16[n]"\ns = "out float32[n]"')
    assert bound.instances()[0].bytes_moved() == 1000 * 2 + 2 * 1000 * 2 + 1000 * 4


def test_seed_from_spec_and_override() -> None:
    header = HEADER + "seed = 7\n"
    bound = bind_text(SAXPY, SAXPY_ARGS, header)
    assert {i.seed for i in bound.instances()} == {7}
    overridden = bound.instances(seed=42)
    assert {i.seed for i in overridden} == {42}
    assert overridden[0].key != bound.instances()[0].key
    assert bound.instances(seed=0)[0].seed == 0


def test_initializer_arguments_are_evaluated() -> None:
    bound = bind_text("__global__ void k(int n, int* x, float* y) {}",
                      'n = "n"\nx = "in int32[n] randint(0, n // 2)"\ny = "out float32[n]"')
    x, y = bound.instances()[0].args[1:]
    assert isinstance(x, BufferValue) and x.init == ("randint", 0.0, 500.0)
    assert isinstance(y, BufferValue) and y.init[0] == "uniform"


@pytest.mark.parametrize("ctype, init", [("int", ("randint", -100.0, 100.0)),
                                         ("unsigned int", ("randint", 0.0, 100.0)),
                                         ("double", ("uniform", -1.0, 1.0))])
def test_default_initializers(ctype: str, init: tuple) -> None:
    dtype = {"int": "int32", "unsigned int": "uint32", "double": "float64"}[ctype]
    bound = bind_text(f"__global__ void k(int n, const {ctype}* x) {{}}", f'n = "n"\nx = "in {dtype}[n]"')
    assert bound.instances()[0].args[1].init == init  # type: ignore[union-attr]


def test_scalar_size_expression() -> None:
    bound = bind_text("__global__ void k(int n, int m, float* y) {}", 'n = "n"\nm = "n * 2 - 1"\ny = "out float32[n]"')
    assert bound.instances()[0].args[1] == ScalarValue("m", "int32", 1999)


def test_non_positive_grid_is_a_spec_error() -> None:
    header = ('[k]\nblock = [256]\ngrid = ["cdiv(n - k + 1, block.x)"]\nsizes = { n = 10, k = 20 }\n'
              'check_sizes = [{ n = 30 }]\n')
    bound = bind_text("__global__ void k(int n, int k, float* y) {}", 'n = "n"\nk = "k"\ny = "out float32[n]"', header)
    with pytest.raises(SpecError) as exc:
        bound.instances()
    msg = str(exc.value)
    assert msg.startswith("k.cuopt.toml: [k] grid: evaluates to (0, 1, 1)")
    assert "must be positive" in msg


def test_negative_element_count_is_a_spec_error() -> None:
    header = ('[k]\nblock = [256]\ngrid = ["1"]\nsizes = { n = 10, k = 20 }\ncheck_sizes = [{ n = 30 }]\n')
    bound = bind_text("__global__ void k(int n, int k, float* y) {}",
                      'n = "n"\nk = "k"\ny = "out float32[n - k]"', header)
    with pytest.raises(SpecError, match=r"^k\.cuopt\.toml: \[k\] args\.y: element count evaluates to -10"):
        bound.instances()


def test_division_by_zero_in_grid_is_a_spec_error() -> None:
    header = '[k]\nblock = [256]\ngrid = ["n // (n - 1000)"]\nsizes = { n = 1000 }\n'
    with pytest.raises(SpecError, match=r"^k\.cuopt\.toml: \[k\] grid: division by zero"):
        bind_text(SAXPY, SAXPY_ARGS, header).instances()


@pytest.mark.parametrize("ctype, value", [("int", 2**31), ("int", -(2**31) - 1), ("unsigned int", -1),
                                          ("short", 40000), ("unsigned char", 256)])
def test_scalar_value_must_fit_the_parameter_type(ctype: str, value: int) -> None:
    """A value the C parameter cannot hold is a spec error, not a failure when the worker packs
    the launch arguments."""
    bound = bind_text(f"__global__ void k(int n, {ctype} m, float* y) {{}}",
                      f'n = "n"\nm = {value}\ny = "out float32[n]"')
    with pytest.raises(SpecError, match=r"args\.m"):
        bound.instances()


@pytest.mark.parametrize("params, reason", [
    ("int n, float* x", None),
    ("int n, Args a", "parameter a has type 'Args', which a spec cannot pass (it passes numbers and pointers to them)"),
    ("int n, float** x", "parameter x is a pointer to pointers, which a spec cannot pass"),
    ("float2 v, int n", "parameter v is a vector (float2) passed by value, which a spec cannot pass"),
])
def test_unsupported_says_which_parameter_no_spec_can_pass(params: str, reason: str | None) -> None:
    """The kernels `cuopt init` leaves out: those whose spec `bind` would refuse whatever it said."""
    assert unsupported(kernel_of(f"struct Args {{ int n; }};\n__global__ void k({params}) {{}}")) == reason


def test_a_template_is_judged_by_its_instantiation() -> None:
    template = load("struct S { int n; };\ntemplate <typename T>\n__global__ void k(T* x, int n) {}\n")
    assert unsupported(template.kernels[0]) is None
    assert unsupported(template.kernel("k<float>")) is None
    assert unsupported(template.kernel("k<S>")) == ("parameter x has type 'T (S)', which a spec cannot pass (it "
                                                    "passes numbers and pointers to them)")
