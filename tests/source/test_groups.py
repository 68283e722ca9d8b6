"""Cooperative groups' ranks read as the built-ins on a one-dimensional launch (cuopt/source/groups.py)."""
from __future__ import annotations

import pytest

from cuopt.source.groups import group_ranks
from cuopt.source.kernels import load

GRID = "((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x)"
THREADS = "((unsigned long long)gridDim.x * blockDim.x)"


def _ranks(body: str, one_dimensional: bool = True) -> list[tuple[str, str]]:
    source = f"__global__ void k(const float* x, float* y, int n)\n{{\n{body}\n}}\n"
    kernel = load(source.encode()).kernels[0]
    return [(node.text.decode(), new) for node, new in group_ranks(kernel, one_dimensional)]


@pytest.mark.parametrize("declared", ["cg::grid_group grid = cg::this_grid();", "auto grid = cg::this_grid();",
                                      "cooperative_groups::grid_group grid = cooperative_groups::this_grid();"])
def test_a_grid_s_rank_and_size_are_the_global_index_and_the_grid_s_threads(declared: str) -> None:
    found = _ranks(f"    {declared}\n    for (int i = grid.thread_rank(); i < n; i += grid.size()) y[i] = x[i];")
    assert found == [("grid.thread_rank()", GRID), ("grid.size()", THREADS), (declared, "")]  # the variable goes


def test_a_block_s_rank_and_a_chained_grid_rank() -> None:
    found = _ranks("    auto block = cg::this_thread_block();\n"
                   "    int i = cg::this_grid().thread_rank();\n"
                   "    if (i < n && block.thread_rank() < block.num_threads()) y[i] = x[i];")
    assert found == [("cg::this_grid().thread_rank()", GRID), ("block.thread_rank()", "(threadIdx.x)"),
                     ("block.num_threads()", "(blockDim.x)"), ("auto block = cg::this_thread_block();", "")]


def test_a_group_named_elsewhere_keeps_its_declaration() -> None:
    found = _ranks("    auto block = cg::this_thread_block();\n    int i = block.thread_rank();\n"
                   "    block.sync();\n    y[i] = x[i];")
    assert found == [("block.thread_rank()", "(threadIdx.x)")]  # block.sync() still names it


@pytest.mark.parametrize("body,one_dimensional", [
    ("    auto grid = cg::this_grid();\n    int i = grid.thread_rank();\n    grid.sync();\n    y[i] = x[i];", True),
    ("    auto grid = cg::this_grid();\n    int i = grid.thread_rank();\n    y[i] = x[i];", False),  # ranks are linear
    ("    auto tile = cg::tiled_partition<32>(cg::this_thread_block());\n    y[tile.thread_rank()] = x[0];", True),
])
def test_nothing_is_read_where_the_ranks_are_not_the_built_ins(body: str, one_dimensional: bool) -> None:
    assert _ranks(body, one_dimensional) == []
