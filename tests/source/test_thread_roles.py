"""Thread-index roles (cuopt/source/thread_roles.py): what a kernel reads along each axis, whether
threads that differ only along unread axes repeat each other's work, the launch without them, and
the grid's batch axes."""
from __future__ import annotations

import pytest

from cuopt.source.kernels import load
from cuopt.source.model import analyze
from cuopt.source.thread_roles import ThreadRoles, batch_axes, lean_launch
from cuopt.spec import expr as E
from cuopt.spec.model import Launch


def roles_of(source: str) -> ThreadRoles:
    kernel = load(source.encode()).kernels[0]
    return analyze(kernel).roles


def launch(block: tuple[int, ...], *grid: str) -> Launch:
    return Launch(block, tuple(E.parse(g) for g in grid))


ROWDOT = """
__global__ void rowdot(const float* m, const float* v, float* y, int n)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < n) {
        float s = 0.0f;
        for (int c = 0; c < n; ++c) s += m[r * n + c] * v[c];
        y[r] = s;
    }
}
"""

SLICES = """
__global__ void slices(const float* x, float* y, int T)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < T) y[blockIdx.y * T + t] = 2.0f * x[blockIdx.y * T + t];
}
"""


def test_a_kernel_that_reads_only_x_repeats_its_work_along_y_and_z() -> None:
    roles = roles_of(ROWDOT)
    assert roles.roles == ("element", "unused", "unused") and roles.repeats is None
    assert roles.reads[0] == {"threadIdx", "blockIdx", "blockDim"}


def test_the_lean_launch_drops_the_copies_and_keeps_the_x_extent() -> None:
    roles = roles_of(ROWDOT)
    assert lean_launch(launch((32, 8), "cdiv(n, block.x)"), roles) == launch((32,), "cdiv(n, block.x)")
    assert lean_launch(launch((256, 4), "cdiv(n, block.x)", "4"), roles) == launch((256,), "cdiv(n, block.x)")
    # a grid written with block.y keeps its value there
    assert lean_launch(launch((32, 8), "cdiv(n, block.x * block.y) * block.y"), roles) == \
        launch((32,), "cdiv(n, block.x * 8) * 8")
    plain = launch((256,), "cdiv(n, block.x)")
    assert lean_launch(plain, roles) is plain


def test_a_batch_index_is_a_per_block_constant_read_as_blockIdx_alone() -> None:
    roles = roles_of(SLICES)
    assert roles.roles == ("element", "batch", "unused")
    batched = launch((256,), "cdiv(T, block.x)", "B * NH")
    assert lean_launch(batched, roles) is batched and batch_axes(batched, roles) == (1,)
    # y threads that only repeat the work go; the batch axis of the grid stays
    assert lean_launch(launch((256, 2), "cdiv(T, block.x)", "B"), roles) == launch((256,), "cdiv(T, block.x)", "B")
    assert batch_axes(launch((256, 2), "cdiv(T, block.x)", "B"), roles) == ()


@pytest.mark.parametrize("body, why", [
    ("if (i < n) atomicAdd(sum, x[i]);", "an atomic at line"),
    ("if (i < n) y[i] = y[i] + x[i];", "y is read and written"),
    ("__shared__ float t[32]; t[threadIdx.x] = x[i]; __syncthreads(); y[i] = t[31 - threadIdx.x];", "shared memory"),
    ("if (i < n) y[i] = __shfl_xor_sync(0xffffffffu, x[i], 1);", "__shfl_xor_sync at line"),
])
def test_copies_that_could_tell_apart_or_add_up_their_work_are_kept(body: str, why: str) -> None:
    roles = roles_of("__global__ void k(const float* x, float* y, float* sum, int n)\n{\n"
                     f"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    {body}\n}}\n")
    assert roles.repeats is not None and why in roles.repeats
    given = launch((32, 8), "cdiv(n, block.x)")
    assert lean_launch(given, roles) is given


def test_other_uses_of_an_axis_are_no_batch_and_no_copy() -> None:
    strided = roles_of("""
__global__ void k(float* y, int T, int B)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    for (int b = blockIdx.y; b < B; b += gridDim.y) if (t < T) y[b * T + t] = 1.0f;
}
""")
    assert strided.roles[1] == "other"
    assert batch_axes(launch((128,), "cdiv(T, block.x)", "B"), strided) == ()
    lane = roles_of("""
__global__ void k(float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && threadIdx.y == 0) y[i] = 1.0f;
}
""")
    assert lane.roles[1] == "other"
    assert lean_launch(launch((32, 8), "cdiv(n, block.x)"), lane).block == (32, 8)


def test_a_helper_that_reads_the_built_ins_hides_every_role() -> None:
    roles = roles_of("""
__device__ int lane_y() { return threadIdx.y; }
__global__ void k(float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = (float)lane_y();
}
""")
    assert roles.roles == ("other", "other", "other") and roles.repeats is not None


def test_a_batch_along_z_past_an_unread_unit_y_axis_leaves_one_element_axis() -> None:
    roles = roles_of("""
__global__ void k(const float* x, float* y, int T)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < T) y[blockIdx.z * T + t] = x[blockIdx.z * T + t];
}
""")
    assert roles.roles == ("element", "unused", "batch")
    assert batch_axes(launch((256,), "cdiv(T, block.x)", "1", "B"), roles) == (1, 2)
    assert batch_axes(launch((256,), "cdiv(T, block.x)", "2", "B"), roles) == (2,)


def test_trailing_grid_axes_one_block_wide_go_whatever_the_kernel_does() -> None:
    atomic = roles_of("""
__global__ void k(const float* x, float* sum, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(sum, x[i]);
}
""")
    assert atomic.repeats is not None
    assert lean_launch(launch((256,), "cdiv(n, block.x)", "1"), atomic) == launch((256,), "cdiv(n, block.x)")
    kept = launch((32, 8), "cdiv(n, block.x)", "1")
    assert lean_launch(kept, atomic) == launch((32, 8), "cdiv(n, block.x)", "1")
