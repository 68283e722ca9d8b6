"""Indices whose type or arithmetic bounds how many values they take (cuopt/source/bounded.py)."""
from __future__ import annotations

import pytest

from cuopt.source.bounded import index_count
from cuopt.source.kernels import load
from cuopt.source.model import analyze


@pytest.mark.parametrize("prelude, index, count", [
    ("", "v[i] & 255", 256),
    ("", "0x3f & v[i]", 64),
    ("", "(v[i] >> 4) & 15u", 16),
    ("", "v[i] % 100", 100),
    ("", "100 % v[i]", None),  # the number is not the modulus
    ("", "v[i] % 0", None),
    ("", "b[i]", 256),  # a byte read from memory
    ("", "h[i]", 65536),  # an unsigned 16-bit type
    ("", "v[i]", None),
    ("", "(unsigned char)v[i]", 256),
    ("", "(int)b[i]", None),  # the cast says int
    ("unsigned char c = v[i];", "c", 256),  # a local of a byte type, whatever it is assigned
    ("int k = v[i] & 63;", "k", 64),  # a local never reassigned: through its value
    ("int k = v[i] & 63; k += 1;", "k", None),
    ("int k = v[i];", "k", None),
])
def test_an_index_bounded_by_its_type_or_arithmetic(prelude: str, index: str, count: int | None) -> None:
    source = (f"__global__ void k(const int* v, const unsigned char* b, const unsigned short* h, int* out, int n)\n"
              f"{{\n    int i = threadIdx.x;\n    {prelude}\n    atomicAdd(&out[{index}], 1);\n}}\n")
    kernel = load(source).kernel("k")
    model = analyze(kernel)
    access = next(a for a in model.accesses if a.array == "out")
    assert index_count(model, access.indices[0]) == count
