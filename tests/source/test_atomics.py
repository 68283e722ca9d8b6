"""Atomic addresses written as pointer sums read as elements (cuopt/source/atomics.py)."""
from __future__ import annotations

from cuopt.source.atomics import atomic_addresses
from cuopt.source.kernels import load


def _addresses(body: str) -> list[tuple[str, str]]:
    kernel = load(f"__global__ void k(const int* keys, int* bins, float* sum, int n)\n{{\n{body}\n}}\n".encode()).kernels[0]
    return [(node.text.decode(), new) for node, new in atomic_addresses(kernel)]


def test_a_pointer_sum_reads_as_the_element_it_addresses() -> None:
    assert _addresses("atomicAdd(bins + keys[0], 1);") == [("bins + keys[0]", "&bins[keys[0]]")]
    assert _addresses("atomicMax((keys[0] & 63) + bins, 1);") == [("(keys[0] & 63) + bins", "&bins[(keys[0] & 63)]")]
    assert _addresses("atomicAdd((bins + 64 + keys[1]), 1);") == [("(bins + 64 + keys[1])", "&bins[64 + keys[1]]")]


def test_other_addresses_keep_their_spelling() -> None:
    assert _addresses("atomicAdd(&bins[keys[0]], 1); atomicAdd(sum, 1.0f);") == []
    assert _addresses("atomicAdd(bins + keys[0] - 1, 1);") == []  # a difference: not read
    assert _addresses("int* half = bins + 64; atomicAdd(half + keys[0], 1);") == []
    assert _addresses("int *a = bins, *b = bins; atomicAdd(bins + (b - a), 1);") == []
    assert _addresses("foo(bins + keys[0], 1);") == []
