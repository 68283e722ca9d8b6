"""The engine's check of every rewrite: parses, same signature, nothing outside the kernel touched."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.rewrite.context import Context, RewriteError, Rewritten
from cuopt.rewrite.engine import verify
from cuopt.rewrite.rule import Rule
from cuopt.spec import expr as E
from cuopt.spec.model import Launch

SOURCE = b"""#define SCALE 2
__global__ void k(int n, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= SCALE;
}
int host_value = 1;
"""
LAUNCH = Launch((256,), (E.parse("cdiv(n, block.x)"),))
RULE = Rule("test-rule", "test", "test", "none", Path("test.toml"))


def check(source: bytes) -> None:
    verify(Context(SOURCE, LAUNCH, "k"), Rewritten(source, LAUNCH, "test"), RULE)


def test_a_rewrite_inside_the_kernel_passes() -> None:
    check(SOURCE.replace(b"y[i] *= SCALE;", b"{ y[i] = y[i] * SCALE; }"))


@pytest.mark.parametrize("before, after", [(b"#define SCALE 2", b"#define SCALE 3"),
                                           (b"int host_value = 1;", b"int host_value = 2;"),
                                           (b"int host_value = 1;\n", b"int host_value = 1;\n\n")])
def test_a_rewrite_that_touches_code_outside_the_kernel_is_refused(before: bytes, after: bytes) -> None:
    with pytest.raises(RewriteError, match="rule test-rule changed code outside kernel k"):
        check(SOURCE.replace(b"y[i] *= SCALE;", b"y[i] = y[i] * SCALE;").replace(before, after))


def test_a_rewrite_that_changes_the_signature_is_refused() -> None:
    with pytest.raises(RewriteError, match="rule test-rule changed the signature of k"):
        check(SOURCE.replace(b"float* y", b"double* y"))
