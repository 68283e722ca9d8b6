"""Template kernels: parsing instantiations, the file's own instantiations, instantiating a kernel
(parameter types, value parameters as constants) and the analysis of an instantiation."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.source.kernels import explicit_instantiation, load
from cuopt.source.model import analyze
from cuopt.source.templates import Instantiation, TemplateError, instantiations, parse_instantiation, same_argument

SCALE = """\
namespace ops {
template <typename T, int BLOCK, int ITEMS = 4>
__global__ void scale(T* __restrict__ out, const T* in, T a, int n)
{
    __shared__ T tile[BLOCK / 2];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < BLOCK; k += ITEMS * 8) { }
    if (i < n) out[i] = a * in[i];
}
template __global__ void scale<float, 256>(float*, const float*, float, int);
}
void run(double* o, const double* x, int n) { ops::scale<double, 128, 2><<<(n + 127) / 128, 128>>>(o, x, 2.0, n); }
"""


def test_parse_instantiation() -> None:
    assert parse_instantiation(" scale < unsigned , 0x10u > ") == Instantiation("scale", ("unsigned int", "0x10u"))
    assert str(parse_instantiation("k<half,true>")) == "k<__half, true>"
    with pytest.raises(TemplateError, match="neither a C type nor an integer literal"):
        parse_instantiation("k<float, n + 1>")


def test_same_argument() -> None:
    assert same_argument("256", "256u") and same_argument("0x100", "256") and same_argument("(short)3", "3")
    assert same_argument("unsigned", "unsigned int") and same_argument("half", "__half")
    assert not same_argument("float", "double") and not same_argument("1", "2")


def test_the_files_instantiations() -> None:
    found = instantiations(load(SCALE).tree.root_node, "scale")
    assert found == [(Instantiation("scale", ("float", "256")), True, 10),
                     (Instantiation("scale", ("double", "128", "2")), False, 12)]


def test_instantiation_types_parameters_and_fills_defaults() -> None:
    k = load(SCALE).kernel("scale<float, 256>")
    assert k is not None and k.entry == "scale<float, 256, 4>"
    assert [(p.name, p.ctype.dtype if p.ctype else None, p.concrete) for p in k.params] == [
        ("out", "float32", "float"), ("in", "float32", "float"), ("a", "float32", "float"), ("n", "int32", "")]
    assert k.constant("BLOCK") == 256 and k.constant("ITEMS") == 4 and k.constant("T") is None
    assert k.signature == load(SCALE).kernel("scale").signature  # as written: rewrites keep it


def test_value_parameters_are_constants_for_the_analysis() -> None:
    m = analyze(load(SCALE).kernel("scale<double, 128, 2>"))
    assert m.loops[0].trip_count == 8 and m.loops[0].step == 16
    assert m.shared["tile"].dims == (64,)
    generic = analyze(load(SCALE).kernel("scale"))
    assert generic.loops[0].trip_count is None and generic.shared["tile"].dims == (None,)


def test_explicit_instantiation_text() -> None:
    k = load(SCALE).kernel("scale<double, 128, 2>")
    assert explicit_instantiation(k) == ("template __global__ void ops::scale<double, 128, 2>"
                                         "(double* __restrict__ out, const double* in, double a, int n);")


@pytest.mark.parametrize("entry, message", [
    ("scale<float>", "scale<float> gives 1 template argument; scale takes 2 to 3 (typename T, value BLOCK, value ITEMS)"),
    ("scale<float, float>", "template argument 2 of scale<float, float> (float) must be an integer literal for BLOCK"),
])
def test_arguments_that_do_not_fit(entry: str, message: str) -> None:
    with pytest.raises(TemplateError) as exc:
        load(SCALE).kernel(entry)
    assert str(exc.value) == message


MACRO_TEMPLATE = b"""\
#define TILE 64
#define DATA_TYPE double
#define BLOCK_SIZE 256
template <typename T, int BLOCK>
__global__ void tiled(T* out, const T* in, int n)
{
    __shared__ T tile[TILE];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < BLOCK; k += 32) { }
    if (i < n) out[i] = in[i];
}
"""


def test_an_instantiation_keeps_the_files_macros(tmp_path: Path) -> None:
    from cuopt.source.preprocess import macros_of

    source = load(MACRO_TEMPLATE, macros_of(MACRO_TEMPLATE, tmp_path / "tiled.cu"))
    k = source.kernel("tiled<DATA_TYPE, BLOCK_SIZE>")
    assert k is not None and k.macros is source.macros
    assert k.entry == "tiled<double, 256>" and k.constant("BLOCK") == 256  # the macros as the compiler sees them
    assert [(p.name, p.ctype.dtype if p.ctype else None) for p in k.params] == [
        ("out", "float64"), ("in", "float64"), ("n", "int32")]
    m = analyze(k)  # the macro TILE and the template argument BLOCK together
    assert m.shared["tile"].dims == (64,) and m.loops[0].trip_count == 8


def test_a_typedef_template_argument_is_the_type_it_names(tmp_path: Path) -> None:
    from cuopt.source.preprocess import macros_of

    data = MACRO_TEMPLATE.replace(b"#define DATA_TYPE double\n", b"typedef float real;\n")
    k = load(data, macros_of(data, tmp_path / "tiled.cu")).kernel("tiled<real, 128>")
    assert k is not None and k.entry == "tiled<float, 128>" and k.params[0].ctype.dtype == "float32"


def test_launches_inside_a_host_template_instantiate_at_each_call() -> None:
    """Library style: the launch names the host template's parameters; each call of the host
    template with explicit arguments instantiates the kernel."""
    src = """template <typename T, int BLOCK>
__global__ void scale(T* y, int n) { int i = blockIdx.x * BLOCK + threadIdx.x; if (i < n) y[i] *= 2; }

template <typename T, int BLOCK>
void run(T* y, int n) { scale<T, BLOCK><<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(y, n); }

template <typename U>
void other(U* y) { scale<U, 64><<<1, 64>>>(y, 64); }

void go(float* f, double* d) {
    run<float, 256>(f, 1000);
    run<double, 128>(d, 1000);
    other<float>(f);
}
"""
    found = [(str(inst), line) for inst, _, line in instantiations(load(src).tree.root_node, "scale")]
    assert found == [("scale<float, 256>", 11), ("scale<double, 128>", 12), ("scale<float, 64>", 13)]


def test_a_demangled_instantiation_with_typed_literals() -> None:
    # how the toolkit's demangler spells non-type arguments: `(int)16`, `(bool)1`
    assert parse_instantiation("mm<(int)16>") == Instantiation("mm", ("16",))
    assert str(parse_instantiation("k<(unsigned int)4, float, (bool)0>")) == "k<4, float, 0>"
