"""The spelling corpus: every sample in every spelling that applies to it gets the same structural
rewrites (rule ids) as the sample as written, after at most one enabling register-accumulate."""
from __future__ import annotations

import functools
from dataclasses import replace

import pytest

from cuopt.training.spellings import SIZED_SPELLINGS, SPELLINGS, spellings
from cuopt.rewrite.context import Context
from cuopt.rewrite.engine import Engine
from cuopt.source.kernels import load
from cuopt.source.preprocess import macros_of
from cuopt.spec import expr as E
from cuopt.targets import collect
from tests.conftest import SAMPLES, sample_names

ENGINE = Engine.default()
OPT_INS = frozenset(o for r in ENGINE.rules.values() for o in r.requires)
ENABLING = "register-accumulate"


@functools.lru_cache(maxsize=None)
def _sample(name: str) -> tuple[str, object]:
    target = collect([SAMPLES / f"{name}.cu"])[0]
    return target.source.source.decode(), target.spec


def _context(source: str, name: str, spec: object) -> Context:
    data = source.encode()
    return Context(data, spec.launch, name, spec, OPT_INS, macros_of(data, SAMPLES / f"{name}.cu"))


def offered(source: str, name: str, spec: object) -> set[str]:
    """The rule ids offered on `source`, and on each result of one register-accumulate step."""
    offers = ENGINE.offers(_context(source, name, spec))
    rules = {o.action.rule for o in offers} - {ENABLING}
    for o in offers:
        if o.action.rule == ENABLING:
            after = ENGINE.offers(_context(o.result.source.decode(), name, spec))
            rules |= {a.rule for a in (x.action for x in after)} - {ENABLING}
    return rules




def _cases() -> list[tuple[str, str]]:
    out = []
    for name in sample_names():
        source, spec = _sample(name)
        out += [(name, s) for s in spellings(source, dict(spec.sizes))]
    return out


@pytest.mark.parametrize("name,spelling", _cases(), ids=[f"{n}:{s}" for n, s in _cases()])
def test_a_spelling_gets_the_rewrites_of_the_sample(name: str, spelling: str) -> None:
    source, spec = _sample(name)
    variant = spellings(source, dict(spec.sizes))[spelling]
    kernel = load(variant.encode(), macros_of(variant.encode(), SAMPLES / f"{name}.cu")).kernel(name)
    assert kernel is not None and not kernel.errors, variant
    expected = offered(source, name, spec)
    if spelling == "unroll-pragma" and source.count("for (") == 1:
        expected -= {"unroll"}  # the one loop already says how to unroll it
    assert offered(variant, name, spec) == expected, variant


def test_every_spelling_applies_to_some_sample() -> None:
    used = {s for _, s in _cases()}
    assert used == set(SPELLINGS) | set(SIZED_SPELLINGS)


def test_a_matmul_with_x_and_y_in_the_other_roles_gets_the_tiling_rules() -> None:
    """`row` from x and `col` from y (the grid swapped to match): smem-tile and register-tile as
    on the sample, which takes `row` from y."""
    source, spec = _sample("matmul")
    row, col = "blockIdx.y * blockDim.y + threadIdx.y", "blockIdx.x * blockDim.x + threadIdx.x"
    swapped = source.replace(f"int row = {row};", "int row = @X;").replace(f"int col = {col};", f"int col = {row};")
    swapped = swapped.replace("@X", col)
    assert swapped != source
    grid = (spec.launch.grid[1], spec.launch.grid[0])
    grid = tuple(E.parse(str(g).replace("block.x", "block.@").replace("block.y", "block.x").replace("block.@", "block.y"))
                 for g in grid)
    swapped_spec = replace(spec, launch=replace(spec.launch, grid=grid))
    got = offered(swapped, "matmul", swapped_spec)
    assert {"smem-tile", "register-tile"} <= got, got


def test_builtin_locals_takes_names_the_kernel_does_not_use() -> None:
    source = ("__global__ void k(const float* a, float* out, int n)\n{\n"
              "    int tid = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "    int bid1 = 0;\n    if (tid < n) out[tid] = a[tid] + bid1;\n}\n")
    spelled = SPELLINGS["builtin-locals"](source)
    assert spelled is not None
    assert "    int tid1 = threadIdx.x;\n    int bid = blockIdx.x;\n    int tid = bid * blockDim.x + tid1;\n" in spelled


@pytest.mark.parametrize("spelling", ["unsigned-index", "size_t-index"])
def test_an_index_that_is_clamped_stays_signed(spelling: str) -> None:
    source = ("__global__ void k(const float* in, float* out, int n)\n{\n"
              "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i >= n) return;\n"
              "    out[i] = in[min(max(i - 1, 0), n - 1)];\n}\n")
    assert SPELLINGS[spelling](source) is None
    assert SPELLINGS[spelling](source.replace("min(max(i - 1, 0), n - 1)", "i")) is not None


def test_a_grid_stride_while_loop_gets_the_rewrites_of_its_for_loop() -> None:
    """No sample walks a grid-stride loop: vector_add written with one, and in CUDA by Example's
    `while` form (`while-step`), gets the same rewrites."""
    source, spec = _sample("vector_add")
    strided = source.replace("    if (i < n) {\n        c[i] = a[i] + b[i];\n    }",
                             "    for (int j = i; j < n; j += blockDim.x * gridDim.x) {\n        c[j] = a[j] + b[j];\n    }")
    spelled = SPELLINGS["while-step"](strided)
    assert spelled is not None and "    int j = i;\n    while (j < n) {\n" in spelled
    assert "        j += blockDim.x * gridDim.x;\n    }" in spelled
    expected = offered(strided, "vector_add", spec)
    assert "vectorize" in expected
    assert offered(spelled, "vector_add", spec) == expected, spelled
