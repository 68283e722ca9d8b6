"""On a GPU: every rewrite of a rule validates on kernels written in several styles, at the timing
size and at check sizes chosen so that both a rule's fast path and its run-time fallback run
(rows that fit or not, outputs that do not divide evenly, misaligned windows, borders).

- row-cache: a hand-written warp-per-row RMS norm and block-per-row softmax, and the softmax and
  layernorm samples after row-parallel;
- window: the conv1d sample, a FIR filter with a macro tap count and __ldg loads, a centered
  stencil, an integer box sum, a filter of the positive inputs (reads under a `?:` served from the
  window its condition's read loads);
- stream: the stencil2d sample, a pitched 3x3 blur with an early return, a double-precision
  9-point star, a 4-point Jacobi step without the center through an index macro; along z, a
  7-point heat step on a 3D launch (also after block-size gives it blocks one plane deep) and a
  25-point wave step through an index macro; along y, a batch of images on blockIdx.z;
- carry: a 7-point Jacobi step walked along z by a loop (double), a row smoothed by one thread
  through a row pointer, a leapfrog wave step over strips read through an accessor macro;
- register-tile: the matmul sample, a column-major SGEMM spelled with accessor macros, a gemm with leading dimensions that leave rows misaligned
  (alpha, beta, an early return), a gemm of A transposed through an index macro, a batch of gemms
  along z (also smem-tile, and coarsen after it);
- smem-tile (and coarsen) on the CUDA samples' tile-row transposes, with bounds checks and as
  transposeNaive is written (no checks, a grid rounded down to whole tiles);
- smem-tile: a blur whose indices come from a __device__ helper; a 3D permute (a batch of
  transposes along z), a transpose with the row along x plus a read at the output's layout, a
  double-precision transpose through __ldg, a 5-point star read through __ldg;
- window-shared: the same five 1D kernels as window;
- expand-loop and stream: a 5x5 filter written with two tap loops, and stream after both expand;
- vectorize: an elementwise template (its vector type declared from T), Caffe's ReLU template (a
  grid-stride loop spelled `CUDA_KERNEL_LOOP(index, n)`, its words sized for T = float), the FIR filter's scalar
  fallback after window and a matmul of B transposed, both read through __ldg;
- warp-atomic: a naive sum (one atomic per element), the same after grid-stride, per-thread
  partials of a fixed grid, an integer maximum per block after an early return;
- coarsen: a clamped 7-point stencil and a clamped 3-tap filter after expand-loop (blocks of
  their own, an index `i + (0) - 1`), an older-style layer norm after vectorize of two loops;
- row-parallel: row sums with a 64-bit row index (`blockIdx.x * (int64_t)blockDim.x + ...`), row
  norms whose masked rows leave early (the team returns together, lane 0 writes), a softmax whose
  row maximum is a compare-and-select (`if (v > m) m = v;`, read as fmaxf);
- vectorize: an llm.c-style cross-entropy (`b = i / T; t = i % T;` recombined, a gather by target
  kept one load per lane); row-parallel: an llm.c-style embedding (its rows through local pointers),
  an argmax (greedy decoding) and an integer argmin with many ties (the first column wins);
- reduce-tree: one partial per block with the grid written with the block's macro (the block size
  stays), an integer sum into an atomic over the same grid (the grid follows a new block);
- block sizes written as constants: smem-tile on a transpose indexed `blockIdx.x * TILE +
  threadIdx.x` with a grid `cdiv(cols, TILE)`, register-tile on a matrix product indexed
  `blockIdx.y * 16 + threadIdx.y`;
- smem-tile: a column-major product whose operands are staged in locals (read as the update);
- privatize: a grid-stride byte histogram on a fixed grid (the copy wraps the loop), and the same
  written as CUDA by Example writes it (a while loop, a parenthesized address); an image histogram
  on a 2D launch (pitched rows, an early return; each thread walks rows);
- vectorize: a half-precision add and GELU (a struct of halves through a raw word), a generated
  kernel (the block's first index in a local, a literal block size, a mask guard);
- window: a moving average guarded `i + WIN <= n` (the offset guard read as `i <= n - WIN`);
- window, window-shared: "same" convolutions whose taps check the array's ends (through a local
  index; PMPP's taps from `i - r` and from `i - Mask_Width / 2`; an odd radius, whose window loads
  scalars); window on the rows of 2D launches: a separable convolution's row pass with
  its bounds checked, a pitched box filter whose rows start misaligned at some sizes; clamp-to-edge
  filters (a local `min(max(i + j, 0), n - 1)`, a row pass with `max(0, min(x + k, w - 1))`), at check sizes where the radius is not a multiple of 4;
- vectorize on 2D launches: s * a + b over a 2D array, a gain and clamp over a pitched image with
  an early return (in place), vertical differences of a batch of images along z with a per-column
  weight (a read at the next row, a row vector), a half-precision tint of a pitched image, the
  vertical blur of a batch of images; check sizes whose rows start misaligned;
- template kernels whose element type is `T`, instantiated for float (T read as float, the body
  pinned to it): a softmax (row-parallel), a 1D convolution (window), a matrix product
  (register-tile);
- window, window-shared: PMPP's 1D convolution with only its store guarded (the taps moved under
  the guard by the normal form);
- smem-tile: a 5-point blur that sums its taps into a local, one statement a tap;
- row-parallel: one-pass row statistics by Welford's update (counted by the loop, or by a count of
  its own, as a layer norm writes it), merged across lanes; the same through a helper with
  reference parameters and a float count; a row sum and maximum through a helper of pointers;
- 24-bit multiplies: vectorize on a grid-stride loop whose index and stride are `__umul24`
  products, row-parallel on row sums indexed through `IMUL(a, b)` (`__mul24`);
- smem-tile on transposeNaive with its sizes as a `constexpr` and an enumerator in a namespace;
- vectorize on a grid-stride loop written with OpenCL-style `get_global_id0()` helpers."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cuopt.evaluate.sweep import sweep
from cuopt.resources import data_dir
from cuopt.rewrite.engine import Engine
from cuopt.rewrite.rule import load_rules
from cuopt.targets import collect
from tests.conftest import SAMPLES
from tests.helpers import cuopt

pytestmark = pytest.mark.gpu

HERE = Path(__file__).parent
CASES = {
    "row-cache:rmsnorm_warp": (HERE / "rowcache" / "rmsnorm_warp.cu", None),
    "row-cache:softmax_block": (HERE / "rowcache" / "softmax_block.cu", None),
    "row-cache:softmax_warp": (SAMPLES / "softmax.cu", "row-parallel@2:1/unit=warp,block=128"),
    "row-cache:layernorm_block": (SAMPLES / "layernorm.cu", "row-parallel@2:1/unit=block,block=256"),
    "window:conv1d": (SAMPLES / "conv1d.cu", None),
    "window:fir_relu": (HERE / "window" / "fir_relu.cu", None),
    "window:centered": (HERE / "window" / "centered.cu", None),
    "window:box_int": (HERE / "window" / "box_int.cu", None),
    "window:rectified": (HERE / "window" / "rectified.cu", None),
    "stream:stencil2d": (SAMPLES / "stencil2d.cu", None),
    "stream:blur3": (HERE / "stream" / "blur3.cu", None),
    "stream:star9_double": (HERE / "stream" / "star9_double.cu", None),
    "stream:laplace4": (HERE / "stream" / "laplace4.cu", None),
    "stream:heat3d": (HERE / "stream" / "heat3d.cu", None),
    "stream:heat3d_slab": (HERE / "stream" / "heat3d.cu", "block-size@3:1/block=32x8x1"),
    "stream:seismic": (HERE / "stream" / "seismic.cu", None),
    "stream:vblur_batch": (HERE / "stream" / "vblur_batch.cu", None),
    "stream:wave_lambda": (HERE / "stream" / "wave_lambda.cu", None),
    "stream:laplace_declared": (HERE / "stream" / "laplace_declared.cu", None),
    "smem-tile:laplace_declared": (HERE / "stream" / "laplace_declared.cu", None),
    "carry:jacobi3d_zloop": (HERE / "carry" / "jacobi3d_zloop.cu", None),
    "carry:row_smooth": (HERE / "carry" / "row_smooth.cu", None),
    "carry:wave_leapfrog": (HERE / "carry" / "wave_leapfrog.cu", None),
    "register-tile:sgemm_accessors": (HERE / "regtile" / "sgemm_accessors.cu", None),
    "register-tile:matmul": (SAMPLES / "matmul.cu", None),
    "register-tile:gemm_ld": (HERE / "regtile" / "gemm_ld.cu", None),
    "register-tile:gemm_tn": (HERE / "regtile" / "gemm_tn.cu", None),
    "register-tile:linear_bias": (HERE / "regtile" / "linear_bias.cu", None),
    "smem-tile:linear_bias": (HERE / "regtile" / "linear_bias.cu", None),
    "smem-tile:blur_helper": (HERE / "smemtile" / "blur_helper.cu", None),
    "smem-tile:permute3d": (HERE / "smemtile" / "permute3d.cu", None),
    "smem-tile:transpose_rowx": (HERE / "smemtile" / "transpose_rowx.cu", None),
    "smem-tile:transpose_bias": (HERE / "smemtile" / "transpose_bias.cu", None),
    "smem-tile:star5_ldg": (HERE / "smemtile" / "star5_ldg.cu", None),
    "window:same_conv": (HERE / "window" / "same_conv.cu", None),
    "window:pmpp_conv": (HERE / "window" / "pmpp_conv.cu", None),
    "window:pmpp_width": (HERE / "window" / "pmpp_width.cu", None),
    "window:blur_odd": (HERE / "window" / "blur_odd.cu", None),
    "window:rows_sep": (HERE / "window" / "rows_sep.cu", None),
    "window:rows_pitched": (HERE / "window" / "rows_pitched.cu", None),
    "window:clamp_edge": (HERE / "window" / "clamp_edge.cu", None),
    "window-shared:clamp_edge": (HERE / "window" / "clamp_edge.cu", None),
    "window:rows_clamp": (HERE / "window" / "rows_clamp.cu", None),
    "window-shared:pmpp_conv": (HERE / "window" / "pmpp_conv.cu", None),
    "window-shared:conv1d": (SAMPLES / "conv1d.cu", None),
    "window-shared:fir_relu": (HERE / "window" / "fir_relu.cu", None),
    "window-shared:centered": (HERE / "window" / "centered.cu", None),
    "window-shared:box_int": (HERE / "window" / "box_int.cu", None),
    "window-shared:rectified": (HERE / "window" / "rectified.cu", None),
    "register-tile:gemm_batched": (HERE / "regtile" / "gemm_batched.cu", None),
    "smem-tile:gemm_batched": (HERE / "regtile" / "gemm_batched.cu", None),
    "coarsen:gemm_batched_tiled": (HERE / "regtile" / "gemm_batched.cu", "smem-tile@11:9/tile=32"),
    "coarsen:conv2d_pmpp": (HERE / "coarsen" / "conv2d_pmpp.cu", None),
    "expand-loop:conv2d": (HERE / "expand" / "conv2d.cu", None),
    "stream:conv2d_expanded": (HERE / "expand" / "conv2d.cu", "expand-loop@9:13 + expand-loop@9:9"),
    "vectorize:scale_add_t": (HERE / "vectorize" / "scale_add_t.cu", None),
    "smem-tile:transpose_rows": (HERE / "smemtile" / "transpose_rows.cu", None),
    "coarsen:transpose_rows": (HERE / "smemtile" / "transpose_rows.cu", None),
    "smem-tile:transpose_naive": (HERE / "smemtile" / "transpose_naive.cu", None),
    "vectorize:caffe_relu": (HERE / "vectorize" / "caffe_relu.cu", None),
    "vectorize:embed_rows": (HERE / "vectorize" / "embed_rows.cu", None),
    "vectorize:fir_relu_windowed": (HERE / "window" / "fir_relu.cu", "window@10:5/outputs=4"),
    "vectorize:matmul_ldg": (HERE / "vectorize" / "matmul_015_s_ldg_loads.cu", None),
    "warp-atomic:naive_sum": (HERE / "warpatomic" / "naive_sum.cu", None),
    "warp-atomic:naive_sum_strided": (HERE / "warpatomic" / "naive_sum.cu", "grid-stride@2:1/per_thread=16"),
    "warp-atomic:partials": (HERE / "warpatomic" / "partials.cu", None),
    "warp-atomic:block_max": (HERE / "warpatomic" / "block_max.cu", None),
    "coarsen:stencil_clamped": (HERE / "coarsen" / "stencil_clamped.cu", "expand-loop@8:5"),
    "coarsen:conv3": (HERE / "coarsen" / "conv3.cu", "expand-loop@7:9"),
    "coarsen:layernorm_old": (HERE / "coarsen" / "layernorm_old.cu", "vectorize@10:5/width=4 + vectorize@26:5/width=4"),
    "row-parallel:rowsum_int64": (HERE / "rowpar" / "rowsum_int64.cu", None),
    "row-parallel:batched_dot": (HERE / "rowpar" / "batched_dot.cu", None),
    "reduce-tree:block_partials": (HERE / "reducetree" / "block_partials.cu", None),
    "reduce-tree:count_atomic": (HERE / "reducetree" / "count_atomic.cu", None),
    "reduce-tree:strided_partial": (HERE / "reducetree" / "strided_partial.cu", None),
    "smem-tile:transpose_tile_macro": (HERE / "smemtile" / "transpose_tile_macro.cu", None),
    "register-tile:matmul_block_literal": (HERE / "regtile" / "matmul_block_literal.cu", None),
    "privatize:histo_fixed_grid": (HERE / "privatize" / "histo_fixed_grid.cu", None),
    "privatize:histo_while": (HERE / "privatize" / "histo_while.cu", None),
    "privatize:hist2d_image": (HERE / "privatize" / "hist2d_image.cu", None),
    "window:moving_avg": (HERE / "window" / "moving_avg.cu", None),
    "vectorize:triton_scale": (HERE / "vectorize" / "triton_scale.cu", None),
    "row-parallel:masked_rownorm": (HERE / "rowpar" / "masked_rownorm.cu", None),
    "row-parallel:softmax_select": (HERE / "rowpar" / "softmax_select.cu", None),
    "vectorize:xent_bt": (HERE / "vectorize" / "xent_bt.cu", None),
    "row-parallel:encoder_bt": (HERE / "rowpar" / "encoder_bt.cu", None),
    "row-parallel:argmax_rows": (HERE / "rowpar" / "argmax_rows.cu", None),
    "row-parallel:argmin_ties": (HERE / "rowpar" / "argmin_ties.cu", None),
    "smem-tile:sgemm_locals": (HERE / "smemtile" / "sgemm_locals.cu", None),
    "vectorize:add_gelu_half": (HERE / "vectorize" / "add_gelu_half.cu", None),
    "vectorize:axpby2d": (HERE / "vectorize" / "axpby2d.cu", None),
    "vectorize:contrast_pitched": (HERE / "vectorize" / "contrast_pitched.cu", None),
    "vectorize:row_diff_batch": (HERE / "vectorize" / "row_diff_batch.cu", None),
    "vectorize:tint_half": (HERE / "vectorize" / "tint_half.cu", None),
    "vectorize:vblur_batch": (HERE / "stream" / "vblur_batch.cu", None),
    "row-parallel:template_softmax": (HERE / "rowpar" / "template_softmax.cu", None),
    "window:template_conv": (HERE / "window" / "template_conv.cu", None),
    "register-tile:matmul_template": (HERE / "regtile" / "matmul_template.cu", None),
    "window:store_guard": (HERE / "window" / "store_guard.cu", None),
    "window-shared:store_guard": (HERE / "window" / "store_guard.cu", None),
    "smem-tile:blur5_local": (HERE / "smemtile" / "blur5_local.cu", None),
    "row-parallel:layernorm_welford": (HERE / "rowpar" / "layernorm_welford.cu", None),
    "row-parallel:welford_stats": (HERE / "rowpar" / "welford_stats.cu", None),
    "row-parallel:welford_helper": (HERE / "rowpar" / "welford_helper.cu", None),
    "row-parallel:rowsum_ptr_helper": (HERE / "rowpar" / "rowsum_ptr_helper.cu", None),
    "vectorize:mul24_scale": (HERE / "vectorize" / "mul24_scale.cu", None),
    "row-parallel:mul24_rowsums": (HERE / "rowpar" / "mul24_rowsums.cu", None),
    "smem-tile:transpose_constexpr": (HERE / "smemtile" / "transpose_constexpr.cu", None),
    "vectorize:global_id_helpers": (HERE / "vectorize" / "global_id_helpers.cu", None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_rewrite_of_the_rule_validates(gpu_client, tmp_path: Path, case: str) -> None:
    rule = case.split(":")[0]
    source, first = CASES[case]
    path = tmp_path / source.name
    if first is None:
        for suffix in (".cu", ".cuopt.toml"):
            shutil.copy(source.with_suffix(suffix), tmp_path)
    else:  # "a + b": rewrites applied in that order first
        steps = [arg for action in first.split(" + ") for arg in ("-a", action)]
        result = cuopt("rewrites", str(source), *steps, "-o", str(path))
        assert result.exit_code == 0, result.output
    rules = load_rules(data_dir("rules"))
    result = sweep(collect([path])[0], gpu_client, Engine({rule: rules[rule]}), gpu_client.device["arch"],
                   timed=False)
    assert "error" not in result, result
    bad = [f"{r['id']}: {r['status']}: {r['detail']}" for r in result["rewrites"] if r["status"] != "ok"]
    assert result["rewrites"] and not bad, "\n".join(bad) or result
