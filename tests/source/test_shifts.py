"""Shifts by a number read as products and quotients where the value is never negative
(cuopt/source/shifts.py, ExprTypes.never_negative)."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.source.kernels import load
from cuopt.source.model import analyze
from cuopt.source.preprocess import macros_of
from cuopt.source.shifts import power_shifts


def _spelled(body: str) -> list[tuple[str, str]]:
    source = f"__global__ void k(float* y, int n, unsigned m)\n{{\n{body}\n}}\n".encode()
    kernel = load(source, macros_of(source, Path("k.cu"))).kernels[0]
    return [(node.text.decode(), new) for node, new in power_shifts(kernel, analyze(kernel).types)]


@pytest.mark.parametrize("body,found", [
    ("int h = blockDim.x >> 1;", [("blockDim.x >> 1", "blockDim.x / 2")]),
    ("y[m << 3] = 0.f;", [("m << 3", "8 * m")]),
    ("for (int g = 1; g < n; g <<= 1) y[threadIdx.x % (g << 1)] = 0.f;", [("g << 1", "2 * g")]),
    ("for (int g = n; g > 0; g >>= 1) y[g >> 1] = 0.f;", []),  # a counter from a signed size may be negative
    ("y[(threadIdx.x + m) >> 2] = 0.f;", [("(threadIdx.x + m) >> 2", "(threadIdx.x + m) / 4")]),
    ("y[threadIdx.x + blockIdx.x << 1] = 0.f;", [("threadIdx.x + blockIdx.x << 1", "2 * (threadIdx.x + blockIdx.x)")]),
    ("y[m >> 1 >> 1] = 0.f;", [("m >> 1 >> 1", "(m / 2) / 2")]),
])
def test_a_shift_of_a_value_never_negative_reads_as_a_product_or_quotient(body: str, found: list) -> None:
    assert _spelled(body) == found


@pytest.mark.parametrize("body", [
    "y[0] = n >> 1;",  # -5 >> 1 is -3, -5 / 2 is -2
    "int d = threadIdx.x - 3; y[0] = d >> 1;",
    "for (int g = 1; g < 64; g <<= 1) { g -= 3; y[g << 1] = 0.f; }",  # assigned in the loop
    "for (int g = 0; g < 64; g -= 1) y[g << 1] = 0.f;",
    "y[m << n] = 0.f;",  # not a number of bits
    "y[m << 0] = 0.f;",
    "y[m >> 31] = 0.f;",
    "y[(int)m >> 1] = 0.f;",
])
def test_a_shift_that_may_differ_from_a_quotient_stays(body: str) -> None:
    assert _spelled(body) == []
