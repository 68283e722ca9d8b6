"""Named casts of numbers read as C casts (cuopt/source/casts.py)."""
from __future__ import annotations

from cuopt.source.casts import named_casts
from cuopt.source.kernels import load


def _casts(body: str) -> list[tuple[str, str]]:
    kernel = load(f"__global__ void k(const float* x, float* y, int n)\n{{\n{body}\n}}\n".encode()).kernels[0]
    return [(node.text.decode(), new) for node, new in named_casts(kernel)]


def test_a_cast_of_a_number_reads_as_a_c_cast_in_parentheses() -> None:
    assert _casts("size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x;") == \
        [("static_cast<size_t>(blockIdx.x)", "((size_t)(blockIdx.x))")]
    assert _casts("long long i = static_cast<unsigned  long long>(n);") == \
        [("static_cast<unsigned  long long>(n)", "((unsigned long long)(n))")]


def test_casts_inside_a_cast_go_with_it_once() -> None:
    assert _casts("y[0] = static_cast<float>(static_cast<double>(x[static_cast<int>(n) - 1]));") == \
        [("static_cast<float>(static_cast<double>(x[static_cast<int>(n) - 1]))",
          "((float)(((double)(x[((int)(n)) - 1]))))")]


def test_casts_of_pointers_and_other_named_casts_keep_their_spelling() -> None:
    assert _casts("y[0] = static_cast<const float*>(x)[1] + reinterpret_cast<const float*>(y)[0];") == []
    assert _casts("int i = const_cast<int>(n) + static_cast<MyIndex>(n);") == []
