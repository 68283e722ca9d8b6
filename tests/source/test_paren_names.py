"""Parenthesized names the parser reads as casts' types (cuopt/source/paren_names.py): the normal form
drops the parentheses, and a macro's replacement is read as C reads it."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.source.kernels import load
from cuopt.source.model import analyze
from cuopt.source.normal_form import FOR_INFERENCE, normal_source
from cuopt.source.preprocess import macros_of

_KERNEL = "{macro}\n__global__ void k(const float* src, float* dst, int nx, int h)\n{{\n{body}\n}}\n"


def _load(body: str, macro: str = ""):
    source = _KERNEL.format(macro=macro, body=body).encode()
    return source, load(source, macros_of(source, Path("k.cu")))


@pytest.mark.parametrize("body,read", [
    ("    int x = threadIdx.x, y = threadIdx.y;\n    dst[(y) + x * h] = src[0];", "dst[y + x * h] = src[0];"),
    ("    dst[((h) + nx * 2) / 4] = src[0];", "dst[(h + nx * 2) / 4] = src[0];"),
])
def test_a_parenthesized_variable_loses_its_parentheses(body: str, read: str) -> None:
    source, file = _load(body)
    assert read in normal_source(source, file.macros, "k", FOR_INFERENCE).source.decode()


@pytest.mark.parametrize("body", [
    "    dst[0] = (float) -src[1];",  # a cast to a type stays
    "    typedef int idx_t;\n    dst[(idx_t) -1 + h] = src[0];",
])
def test_a_cast_to_a_type_stays(body: str) -> None:
    source, file = _load(body)
    assert normal_source(source, file.macros, "k", FOR_INFERENCE).source == source


def test_an_index_macro_reads_alike_in_either_term_order() -> None:
    body = "    int x = blockIdx.x * blockDim.x + threadIdx.x;\n    int y = threadIdx.y;\n    dst[AT(x, y - 1)] = src[0];"
    polys = []
    for macro in ("#define AT(x, y) ((nx) * (y) + (x))", "#define AT(x, y) ((x) + (nx) * (y))"):
        _, file = _load(body, macro)
        [store] = [a for a in analyze(file.kernels[0]).accesses if a.array == "dst"]
        polys.append(store.flat)
    assert polys[0] is not None and polys[0] == polys[1]
    assert polys[0].coefficient("threadIdx.x").constant() == 1
