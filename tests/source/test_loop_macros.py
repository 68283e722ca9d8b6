"""Loop macros (`CUDA_KERNEL_LOOP(i, n) { ... }`) are read as the `for` headers they expand to, and
only those: other function-like macros, and uses the parser does not read as a loop's head, stay."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.source.kernels import load
from cuopt.source.loop_macros import loop_macro_headers
from cuopt.source.preprocess import macros_of

CAFFE = ("#define CUDA_KERNEL_LOOP(i, n) \\\n  for (int i = blockIdx.x * blockDim.x + threadIdx.x; \\\n"
         "       i < (n); \\\n       i += blockDim.x * gridDim.x)\n")
TYPED = ("#define LOOP_T(i, n, T) for (T i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); "
         "i += blockDim.x * gridDim.x)\n#define LOOP64(i, n) LOOP_T(i, n, long long)\n")


def headers(defines: str, body: str) -> list[tuple[str, str]]:
    data = f"{defines}__global__ void k(int n, int c, float* y)\n{{\n{body}\n}}\n".encode()
    kernel = load(data, macros_of(data, Path("k.cu"))).kernel("k")
    assert kernel is not None and not kernel.errors, data.decode()
    return [(node.text.decode(), header) for node, header in loop_macro_headers(kernel)]


@pytest.mark.parametrize("defines, body, expected", [
    (CAFFE, "  CUDA_KERNEL_LOOP(i, n) {\n    y[i] = 0;\n  }",
     [("CUDA_KERNEL_LOOP(i, n)",
       "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)")]),
    # an argument that reads as a declaration (`n * c`: a pointer c of type n) is taken as written
    (CAFFE, "  CUDA_KERNEL_LOOP(i, n * c) { y[i] = 0; }",
     [("CUDA_KERNEL_LOOP(i, n * c)",
       "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n * c); i += blockDim.x * gridDim.x)")]),
    # a macro defined through another, with a type argument of two words
    (TYPED, "  if (n > 0) {\n    LOOP64(j, n) { y[j] = 1; }\n  }",
     [("LOOP64(j, n)",
       "for (long long j = blockIdx.x * blockDim.x + threadIdx.x; j < (n); j += blockDim.x * gridDim.x)")]),
    (CAFFE, "  CUDA_KERNEL_LOOP(i, n) { y[i] = 0; }\n  CUDA_KERNEL_LOOP(j, c) { y[j] += 1; }",
     [("CUDA_KERNEL_LOOP(i, n)",
       "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)"),
      ("CUDA_KERNEL_LOOP(j, c)",
       "for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < (c); j += blockDim.x * gridDim.x)")]),
])
def test_a_loop_macro_becomes_its_for_header(defines: str, body: str, expected: list[tuple[str, str]]) -> None:
    assert headers(defines, body) == expected


@pytest.mark.parametrize("defines, body", [
    # not a loop: a guard macro, a macro whose expansion is a whole loop with its body
    ("#define IF_IN(i, n) if ((i) < (n))\n", "  IF_IN(c, n) { y[c] = 0; }"),
    ("#define ZERO(i, n) for (int i = 0; i < (n); ++i) y[i] = 0;\n", "  ZERO(i, n) { y[0] = 1; }"),
    # the argument count differs from the macro's
    (CAFFE, "  CUDA_KERNEL_LOOP(i) { y[i] = 0; }"),
    # no macro of that name
    ("", "  GRID_LOOP(i, n) { y[i] = 0; }"),
])
def test_other_uses_stay(defines: str, body: str) -> None:
    assert headers(defines, body) == []
