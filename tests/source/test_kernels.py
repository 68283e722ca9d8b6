"""Kernel parameters as the compiler sees them: types through macros."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.source.kernels import load
from cuopt.source.parse import parse, syntax_issues
from cuopt.source.preprocess import macros_of
from cuopt.spec.dtypes import CType

KERNEL = b"""#include "types.h"
__global__ void k(const DATA_TYPE* __restrict__ a, DATA_TYPE *b, DATA_TYPE alpha, INDEX n, float x[]) {}
"""


def test_parameter_types_through_macros(tmp_path: Path) -> None:
    (tmp_path / "types.h").write_text("#define DATA_TYPE float\n#define INDEX unsigned int\n")
    path = tmp_path / "k.cu"
    kernel = load(KERNEL, macros_of(KERNEL, path)).kernel("k")
    a, b, alpha, n, x = kernel.params
    assert (a.base_type, a.pointer, a.const, a.restrict, a.ctype) == ("float", 1, True, True, CType("float32"))
    assert (b.ctype, alpha.ctype, alpha.pointer, n.ctype, x.ctype) == (
        CType("float32"), CType("float32"), 0, CType("uint32"), CType("float32"))
    assert kernel.signature == ("k", ("const float*", "float*", "float", "unsigned int", "float*"))


def test_without_the_header_the_macro_type_stays_unknown(tmp_path: Path) -> None:
    kernel = load(KERNEL, macros_of(KERNEL, tmp_path / "k.cu")).kernel("k")
    assert kernel.params[0].base_type == "DATA_TYPE" and kernel.params[0].ctype is None


def test_the_same_bytes_with_other_macros_load_apart(tmp_path: Path) -> None:
    (tmp_path / "types.h").write_text("#ifndef DATA_TYPE\n#define DATA_TYPE float\n#endif\n#define INDEX int\n")
    path = tmp_path / "k.cu"
    single = load(KERNEL, macros_of(KERNEL, path))
    double = load(KERNEL, macros_of(KERNEL, path, defines=(("DATA_TYPE", "double"),)))
    assert single.kernel("k").params[1].ctype == CType("float32")
    assert double.kernel("k").params[1].ctype == CType("float64")
    assert load(KERNEL, single.macros) is single


SPLIT_IF = b"""__global__ void scale(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef EARLY_EXIT
    if (i >= n) return;
#else
    if (i < n)
#endif
    { y[i] = 2.0f * x[i]; }
}
"""


@pytest.mark.parametrize("defines", [(), (("EARLY_EXIT", None),)])
def test_a_directive_that_splits_a_statement_parses_with_the_branches_taken(tmp_path, defines) -> None:
    from cuopt.source.preprocess import macros_of

    path = tmp_path / "k.cu"
    path.write_bytes(SPLIT_IF)
    assert syntax_issues(parse(SPLIT_IF))  # tree-sitter alone cannot parse it
    f = load(SPLIT_IF, macros_of(SPLIT_IF, path, (), defines))
    [k] = f.kernels
    assert not f.errors and not k.errors and k.conditional
    assert f.source == SPLIT_IF  # the text keeps every branch; only the parse skips the untaken ones


def test_conditionals_that_parse_as_written_are_not_blanked(tmp_path) -> None:
    source = SPLIT_IF.replace(b"    if (i < n)\n#endif\n    { y[i] = 2.0f * x[i]; }", b"    if (i < n) { y[i] = 2.0f * x[i]; }\n#endif")
    [k] = load(source).kernels
    assert not k.errors and not k.conditional


def test_the_short_restrict_spelling_counts_as_restrict() -> None:
    [k] = load(b"__global__ void k(float *__restrict out, const float *__restrict__ in, float *plain) {}").kernels
    assert [p.restrict for p in k.params] == [True, True, False]


def test_cudas_align_attribute_parses() -> None:
    source = (b"__global__ void k(const float* in, float* out)\n{\n"
              b"    extern __shared__ __align__(sizeof(float)) unsigned char raw[];\n"
              b"    float* s = reinterpret_cast<float*>(raw);\n    s[threadIdx.x] = in[threadIdx.x];\n"
              b"    __syncthreads();\n    out[threadIdx.x] = s[0];\n}\n")
    assert syntax_issues(parse(source))  # tree-sitter alone cannot parse it
    f = load(source)
    [k] = f.kernels
    assert not f.errors and k.conditional and f.source == source
