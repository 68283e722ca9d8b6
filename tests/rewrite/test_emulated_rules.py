"""Without a GPU: every rewrite of the rules that synchronize only within a block computes what
the original computes, run on the CPU at small sizes (tests/rewrite/emulate.py), on the kernels
the GPU rule cases use (tests/rewrite/test_gpu_rule_cases.py) and more, so that a transform's
mistake shows in CI and not only on a GPU machine."""
from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cuopt.learn.spellings import SPELLINGS
from cuopt.rewrite.engine import Engine
from cuopt.targets import collect, rewrite_contexts
from tests.conftest import SAMPLES
from tests.helpers import cuopt
from tests.rewrite.emulate import Program, Variant, compiler, differences, program

pytestmark = pytest.mark.skipif(compiler() is None, reason="needs g++ with C++20 <barrier>")

HERE = Path(__file__).parent
# case -> (kernel file, rewrites applied first ("a + b") or None, size sets: small and uneven, so
# that a rule's fast path and its fallback both run; every CUDA thread is a CPU thread). `rule:sample/spelling`
# cases write the sample in that spelling first. Some cases take a subset of the rule's variants
# (SUBSETS: a predicate on the parameters), to keep the test short.
CASES = {
    "register-tile:matmul": (SAMPLES / "matmul.cu", None, [{"M": 130, "N": 67, "K": 37}, {"M": 5, "N": 3, "K": 2}]),
    "register-tile:gemm_ld": (HERE / "regtile" / "gemm_ld.cu", None,
                              [{"M": 130, "N": 67, "K": 37, "lda": 41, "ldb": 70}, {"M": 64, "N": 128, "K": 64,
                                                                                  "lda": 64, "ldb": 128}]),
    "register-tile:gemm_tn": (HERE / "regtile" / "gemm_tn.cu", None, [{"M": 131, "N": 66, "K": 45},
                                                                     {"M": 3, "N": 130, "K": 17}]),
    "register-tile:gemm_batched": (HERE / "regtile" / "gemm_batched.cu", None,
                                   [{"batch": 2, "M": 67, "N": 70, "K": 37}, {"batch": 3, "M": 3, "N": 5, "K": 2}]),
    "smem-tile:gemm_batched": (HERE / "regtile" / "gemm_batched.cu", None, [{"batch": 2, "M": 67, "N": 70, "K": 37}]),
    "coarsen:gemm_batched_tiled": (HERE / "regtile" / "gemm_batched.cu", "smem-tile@11:9/tile=32",
                                   [{"batch": 2, "M": 67, "N": 70, "K": 37}]),
    "coarsen:conv2d_pmpp": (HERE / "coarsen" / "conv2d_pmpp.cu", None, [{"r": 2, "width": 37, "height": 29},
                                                                       {"r": 1, "width": 5, "height": 70}]),
    "window:conv1d": (SAMPLES / "conv1d.cu", None, [{"n": 5000, "k": 31}, {"n": 777, "k": 9}, {"n": 40, "k": 1}]),
    "window:fir_relu": (HERE / "window" / "fir_relu.cu", None, [{"n": 4097}, {"n": 13}]),
    "window:centered": (HERE / "window" / "centered.cu", None, [{"n": 5000, "r": 4}, {"n": 50, "r": 12}]),
    "window:box_int": (HERE / "window" / "box_int.cu", None, [{"count": 4099, "width": 31}, {"count": 50, "width": 3}]),
    "window:rectified": (HERE / "window" / "rectified.cu", None, [{"n": 4097, "k": 16}, {"n": 50, "k": 9},
                                                                 {"n": 13, "k": 3}]),
    # "same" convolutions: each tap's read checked against the array's ends; the blocks at the ends fall back
    "window:same_conv": (HERE / "window" / "same_conv.cu", None, [{"n": 1100, "RADIUS": 8}, {"n": 37, "RADIUS": 8}]),
    "window:pmpp_conv": (HERE / "window" / "pmpp_conv.cu", None, [{"Width": 1100, "r": 4}, {"Width": 1030, "r": 3},
                                                                  {"Width": 29, "r": 8}]),
    "window:pmpp_width": (HERE / "window" / "pmpp_width.cu", None, [{"Width": 1100, "Mask_Width": 17},
                                                                    {"Width": 1030, "Mask_Width": 9},
                                                                    {"Width": 29, "Mask_Width": 5}]),
    "window:blur_odd": (HERE / "window" / "blur_odd.cu", None, [{"n": 1100, "R": 5}, {"n": 37, "R": 5}]),
    # rows of 2D launches: a separable convolution's row pass, a pitched box filter (rows misaligned at some sizes)
    "window:rows_sep": (HERE / "window" / "rows_sep.cu", None, [{"imageW": 130, "imageH": 5, "KERNEL_RADIUS": 8},
                                                                {"imageW": 37, "imageH": 3, "KERNEL_RADIUS": 8}]),
    "window:rows_pitched": (HERE / "window" / "rows_pitched.cu", None,
                            [{"width": 130, "height": 5, "pitch": 132, "R": 4},
                             {"width": 37, "height": 5, "pitch": 39, "R": 4}]),
    # clamp-to-edge addressing: the ends' blocks fall back
    "window:clamp_edge": (HERE / "window" / "clamp_edge.cu", None, [{"n": 1100, "RADIUS": 8}, {"n": 37, "RADIUS": 8},
                                                                    {"n": 9, "RADIUS": 8}]),
    "window-shared:clamp_edge": (HERE / "window" / "clamp_edge.cu", None, [{"n": 2100, "RADIUS": 8},
                                                                           {"n": 37, "RADIUS": 8}]),
    "window:rows_clamp": (HERE / "window" / "rows_clamp.cu", None, [{"width": 130, "height": 5, "R": 4},
                                                                    {"width": 6, "height": 3, "R": 4}]),
    "window-shared:pmpp_conv": (HERE / "window" / "pmpp_conv.cu", None, [{"Width": 2100, "r": 4},
                                                                         {"Width": 29, "r": 8}]),
    "window-shared:conv1d": (SAMPLES / "conv1d.cu", None, [{"n": 5000, "k": 31}, {"n": 3001, "k": 9},
                                                          {"n": 3001, "k": 37}, {"n": 40, "k": 1}]),
    "window-shared:fir_relu": (HERE / "window" / "fir_relu.cu", None, [{"n": 4097}, {"n": 13}]),
    "window-shared:centered": (HERE / "window" / "centered.cu", None, [{"n": 5000, "r": 4}, {"n": 3000, "r": 12}]),
    "window-shared:box_int": (HERE / "window" / "box_int.cu", None, [{"count": 4099, "width": 31},
                                                                    {"count": 50, "width": 3}]),
    "window-shared:rectified": (HERE / "window" / "rectified.cu", None, [{"n": 5000, "k": 16}, {"n": 3001, "k": 9},
                                                                      {"n": 3001, "k": 21}]),
    "stream:stencil2d": (SAMPLES / "stencil2d.cu", None, [{"h": 70, "w": 67}, {"h": 3, "w": 5}]),
    "stream:blur3": (HERE / "stream" / "blur3.cu", None, [{"width": 77, "height": 13, "pitch": 80},
                                                          {"width": 130, "height": 9, "pitch": 132}]),
    "stream:star9_double": (HERE / "stream" / "star9_double.cu", None, [{"nx": 37, "ny": 11}, {"nx": 70, "ny": 20}]),
    "stream:laplace4": (HERE / "stream" / "laplace4.cu", None, [{"width": 67, "height": 45}, {"width": 5, "height": 3}]),
    "stream:heat3d": (HERE / "stream" / "heat3d.cu", None, [{"nx": 19, "ny": 11, "nz": 70}, {"nx": 5, "ny": 3, "nz": 3}]),
    "stream:heat3d_slab": (HERE / "stream" / "heat3d.cu", "block-size@3:1/block=32x8x1",
                           [{"nx": 37, "ny": 11, "nz": 21}, {"nx": 5, "ny": 3, "nz": 3}]),
    "stream:seismic": (HERE / "stream" / "seismic.cu", None, [{"nx": 13, "ny": 11, "nz": 45}, {"nx": 9, "ny": 9, "nz": 10}]),
    "stream:wave_lambda": (HERE / "stream" / "wave_lambda.cu", None, [{"nx": 37, "ny": 29}, {"nx": 5, "ny": 70}]),
    "stream:laplace_declared": (HERE / "stream" / "laplace_declared.cu", None, [{"ni": 37, "nj": 29}, {"ni": 70, "nj": 5}]),
    "smem-tile:linear_bias": (HERE / "regtile" / "linear_bias.cu", None, [{"BT": 13, "C": 7, "OC": 9},
                                                                         {"BT": 17, "C": 5, "OC": 33}]),
    "stream:vblur_batch": (HERE / "stream" / "vblur_batch.cu", None, [{"w": 37, "h": 45, "batch": 2},
                                                                      {"w": 5, "h": 3, "batch": 2}]),
    "carry:jacobi3d_zloop": (HERE / "carry" / "jacobi3d_zloop.cu", None, [{"nx": 19, "ny": 11, "nz": 9},
                                                                          {"nx": 5, "ny": 3, "nz": 2}]),
    "carry:row_smooth": (HERE / "carry" / "row_smooth.cu", None, [{"rows": 37, "cols": 101}, {"rows": 5, "cols": 2}]),
    "carry:wave_leapfrog": (HERE / "carry" / "wave_leapfrog.cu", None, [{"n": 1001, "strip": 7}, {"n": 6, "strip": 64}]),
    "register-tile:sgemm_accessors": (HERE / "regtile" / "sgemm_accessors.cu", None,
                                      [{"m": 130, "n": 67, "k": 37, "lda": 131, "ldb": 40, "ldc": 133}]),
    "row-cache:rmsnorm_warp": (HERE / "rowcache" / "rmsnorm_warp.cu", None, [{"n_rows": 5, "dim": 97},
                                                                             {"n_rows": 3, "dim": 1000}]),
    "row-cache:softmax_block": (HERE / "rowcache" / "softmax_block.cu", None, [{"N": 5, "C": 97}, {"N": 3, "C": 1000}]),
    "row-cache:softmax_warp": (SAMPLES / "softmax.cu", "row-parallel@2:1/unit=warp,block=128",
                               [{"rows": 5, "cols": 1000}, {"rows": 3, "cols": 37}]),
    "smem-tile:transpose": (SAMPLES / "transpose.cu", None, [{"rows": 70, "cols": 45}]),
    "smem-tile:blur_helper": (HERE / "smemtile" / "blur_helper.cu", None, [{"w": 70, "h": 19}, {"w": 5, "h": 3}]),
    "smem-tile:permute3d": (HERE / "smemtile" / "permute3d.cu", None, [{"d0": 3, "d1": 37, "d2": 70},
                                                                        {"d0": 2, "d1": 5, "d2": 3}]),
    "smem-tile:transpose_rowx": (HERE / "smemtile" / "transpose_rowx.cu", None, [{"rows": 70, "cols": 45},
                                                                                  {"rows": 5, "cols": 3}]),
    "smem-tile:transpose_bias": (HERE / "smemtile" / "transpose_bias.cu", None, [{"rows": 45, "cols": 70}]),
    "smem-tile:star5_ldg": (HERE / "smemtile" / "star5_ldg.cu", None, [{"w": 70, "h": 19}, {"w": 5, "h": 3}]),
    "warp-atomic:naive_sum": (HERE / "warpatomic" / "naive_sum.cu", None, [{"n": 4097}, {"n": 13}]),
    "warp-atomic:naive_sum_strided": (HERE / "warpatomic" / "naive_sum.cu", "grid-stride@2:1/per_thread=16",
                                      [{"n": 4097}, {"n": 13}]),
    "warp-atomic:partials": (HERE / "warpatomic" / "partials.cu", None, [{"n": 4097}, {"n": 13}]),
    "warp-atomic:block_max": (HERE / "warpatomic" / "block_max.cu", None, [{"n": 4097}, {"n": 13}]),
    "vectorize:scale_add_t": (HERE / "vectorize" / "scale_add_t.cu", None, [{"n": 4097}, {"n": 13}]),
    "smem-tile:transpose_naive": (HERE / "smemtile" / "transpose_naive.cu", None,
                                  [{"width": 70, "height": 64, "TILE_DIM": 32, "BLOCK_ROWS": 8}]),
    "vectorize:embed_rows": (HERE / "vectorize" / "embed_rows.cu", None, [{"T": 5, "D": 37, "V": 11}, {"T": 3, "D": 64, "V": 7}]),
    "vectorize:fir_relu_windowed": (HERE / "window" / "fir_relu.cu", "window@10:5/outputs=4", [{"n": 4097}, {"n": 13}]),
    "vectorize:matmul_ldg": (HERE / "vectorize" / "matmul_015_s_ldg_loads.cu", None,
                             [{"M": 37, "N": 45, "K": 64}, {"M": 19, "N": 33, "K": 37}, {"M": 5, "N": 3, "K": 2}]),
    "privatize:histogram": (SAMPLES / "histogram.cu", None, [{"n": 20011}]),
    "privatize:hist2d_image": (HERE / "privatize" / "hist2d_image.cu", None,
                               [{"width": 37, "height": 19, "pitch": 40}]),
    "expand-loop:conv2d": (HERE / "expand" / "conv2d.cu", None, [{"w": 37, "h": 19}]),
    "expand-loop:conv2d_inner_first": (HERE / "expand" / "conv2d.cu", "expand-loop@9:13", [{"w": 37, "h": 19}]),
    "stream:conv2d_expanded": (HERE / "expand" / "conv2d.cu", "expand-loop@9:13 + expand-loop@9:9",
                               [{"w": 37, "h": 19}, {"w": 7, "h": 5}]),
    "row-parallel:softmax": (SAMPLES / "softmax.cu", None, [{"rows": 7, "cols": 1000}]),
    "row-parallel:batched_dot": (HERE / "rowpar" / "batched_dot.cu", None, [{"batch": 37, "dim": 45}, {"batch": 5, "dim": 3}]),
    "row-parallel:layernorm": (SAMPLES / "layernorm.cu", None, [{"rows": 7, "cols": 1000}]),
    "row-parallel:matvec": (SAMPLES / "matvec.cu", None, [{"rows": 13, "cols": 1001}]),
    "vectorize:xent_bt": (HERE / "vectorize" / "xent_bt.cu", None, [{"B": 3, "T": 37, "V": 11}, {"B": 2, "T": 5, "V": 3}]),
    "row-parallel:encoder_bt": (HERE / "rowpar" / "encoder_bt.cu", None, [{"B": 3, "T": 37, "C": 11, "V": 64},
                                                                       {"B": 2, "T": 5, "C": 70, "V": 7}]),
    "vectorize:encoder_bt": (HERE / "rowpar" / "encoder_bt.cu", None, [{"B": 3, "T": 37, "C": 11, "V": 64}]),
    "row-parallel:argmax_rows": (HERE / "rowpar" / "argmax_rows.cu", None, [{"rows": 37, "cols": 1001},
                                                                           {"rows": 5, "cols": 3}]),
    "row-parallel:argmin_ties": (HERE / "rowpar" / "argmin_ties.cu", None, [{"rows": 37, "cols": 1001},
                                                                           {"rows": 9, "cols": 70}]),
    "row-parallel:softmax_select": (HERE / "rowpar" / "softmax_select.cu", None, [{"N": 37, "C": 1001},
                                                                                 {"N": 5, "C": 3}]),
    "row-parallel:rowsum_int64": (HERE / "rowpar" / "rowsum_int64.cu", None, [{"rows": 13, "cols": 1001},
                                                                             {"rows": 70, "cols": 5}]),
    "reduce-tree:reduce_sum": (SAMPLES / "reduce_sum.cu", None, [{"n": 20011}, {"n": 13}]),
    "reduce-tree:block_partials": (HERE / "reducetree" / "block_partials.cu", None, [{"n": 20011, "BLOCK": 256},
                                                                                    {"n": 13, "BLOCK": 256}]),
    "reduce-tree:count_atomic": (HERE / "reducetree" / "count_atomic.cu", None, [{"n": 20011, "BLOCK": 256},
                                                                                {"n": 13, "BLOCK": 256}]),
    "reduce-tree:strided_partial": (HERE / "reducetree" / "strided_partial.cu", None, [{"n": 20011}, {"n": 13}]),
    "smem-tile:transpose_tile_macro": (HERE / "smemtile" / "transpose_tile_macro.cu", None,
                                       [{"rows": 70, "cols": 45, "TILE": 16}]),
    "coarsen:transpose_tile_macro": (HERE / "smemtile" / "transpose_tile_macro.cu", None,
                                     [{"rows": 70, "cols": 45, "TILE": 16}]),
    "register-tile:matmul_block_literal": (HERE / "regtile" / "matmul_block_literal.cu", None, [{"N": 131}]),
    "privatize:histo_fixed_grid": (HERE / "privatize" / "histo_fixed_grid.cu", None, [{"size": 100003}, {"size": 77}]),
    "privatize:histo_while": (HERE / "privatize" / "histo_while.cu", None, [{"size": 100003}, {"size": 77}]),
    "window:moving_avg": (HERE / "window" / "moving_avg.cu", None, [{"n": 5003, "WIN": 16}, {"n": 20, "WIN": 16},
                                                                   {"n": 17, "WIN": 16}]),
    "coarsen:moving_avg": (HERE / "window" / "moving_avg.cu", None, [{"n": 5003, "WIN": 16}, {"n": 17, "WIN": 16}]),
    "vectorize:triton_scale": (HERE / "vectorize" / "triton_scale.cu", None, [{"xnumel": 5003}, {"xnumel": 7}]),
    "row-parallel:masked_rownorm": (HERE / "rowpar" / "masked_rownorm.cu", None, [{"rows": 37, "cols": 101},
                                                                               {"rows": 5, "cols": 3}]),
    "smem-tile:sgemm_locals": (HERE / "smemtile" / "sgemm_locals.cu", None,
                               [{"m": 67, "n": 45, "k": 37, "lda": 70, "ldb": 48, "ldc": 67}]),
    "grid-stride:triton_scale": (HERE / "vectorize" / "triton_scale.cu", None, [{"xnumel": 5003}, {"xnumel": 7}]),
    "coarsen:stencil_clamped": (HERE / "coarsen" / "stencil_clamped.cu", "expand-loop@8:5", [{"n": 4097}, {"n": 13}]),
    "coarsen:conv3": (HERE / "coarsen" / "conv3.cu", "expand-loop@7:9", [{"n": 4097}, {"n": 13}]),
    "coarsen:layernorm_old": (HERE / "coarsen" / "layernorm_old.cu", "vectorize@10:5/width=4 + vectorize@26:5/width=4",
                              [{"rows": 300, "cols": 37}, {"rows": 5, "cols": 8}]),
    "window:store_guard": (HERE / "window" / "store_guard.cu", None, [{"Width": 1100, "Mask_Width": 9},
                                                                     {"Width": 37, "Mask_Width": 7}]),
    "window-shared:store_guard": (HERE / "window" / "store_guard.cu", None, [{"Width": 2100, "Mask_Width": 9},
                                                                            {"Width": 29, "Mask_Width": 17}]),
    "row-parallel:template_softmax": (HERE / "rowpar" / "template_softmax.cu", None, [{"rows": 37, "cols": 45},
                                                                                     {"rows": 5, "cols": 3}]),
    "window:template_conv": (HERE / "window" / "template_conv.cu", None, [{"n": 1100, "k": 9}, {"n": 37, "k": 5}]),
    "register-tile:matmul_template": (HERE / "regtile" / "matmul_template.cu", None, [{"M": 67, "N": 70, "K": 37}]),
    "smem-tile:blur5_local": (HERE / "smemtile" / "blur5_local.cu", None, [{"w": 70, "h": 19}, {"w": 5, "h": 3}]),
    "row-parallel:layernorm_welford": (HERE / "rowpar" / "layernorm_welford.cu", None,
                                       [{"rows": 37, "cols": 45}, {"rows": 5, "cols": 3}, {"rows": 3, "cols": 1000}]),
    "row-parallel:welford_helper": (HERE / "rowpar" / "welford_helper.cu", None, [{"rows": 37, "cols": 45},
                                                                                 {"rows": 5, "cols": 1000}]),
    "row-parallel:rowsum_ptr_helper": (HERE / "rowpar" / "rowsum_ptr_helper.cu", None, [{"rows": 37, "cols": 45},
                                                                                         {"rows": 5, "cols": 1000}]),
    "row-parallel:welford_stats": (HERE / "rowpar" / "welford_stats.cu", None, [{"rows": 37, "cols": 45},
                                                                               {"rows": 5, "cols": 1000}]),
    # samples in other spellings (cuopt.learn.spellings): the rules take them through the normal form
    "register-tile:matmul/fma-accumulate": (SAMPLES / "matmul.cu", None, [{"M": 67, "N": 45, "K": 33}]),
    "register-tile:matmul/row-pointer": (SAMPLES / "matmul.cu", None, [{"M": 67, "N": 45, "K": 33}]),
    "smem-tile:matmul/ldg-loads": (SAMPLES / "matmul.cu", None, [{"M": 67, "N": 45, "K": 33}]),
    "window:conv1d/row-pointer": (SAMPLES / "conv1d.cu", None, [{"n": 3001, "k": 31}, {"n": 40, "k": 3}]),
    "window:conv1d/fma-accumulate": (SAMPLES / "conv1d.cu", None, [{"n": 3001, "k": 31}]),
    "vectorize:matvec/unroll-pragma": (SAMPLES / "matvec.cu", None, [{"rows": 77, "cols": 1001}]),
    "vectorize:vector_add/builtin-locals": (SAMPLES / "vector_add.cu", None, [{"n": 4099}]),
    # 2D elementwise: widths off a multiple of 4, so rows start misaligned and the scalar fallback runs
    "vectorize:axpby2d": (HERE / "vectorize" / "axpby2d.cu", None, [{"w": 37, "h": 5}, {"w": 70, "h": 3},
                                                                    {"w": 3, "h": 2}]),
    "vectorize:contrast_pitched": (HERE / "vectorize" / "contrast_pitched.cu", None,
                                   [{"width": 37, "height": 5, "pitch": 39}, {"width": 77, "height": 13, "pitch": 80},
                                    {"width": 6, "height": 3, "pitch": 7}]),
    "vectorize:row_diff_batch": (HERE / "vectorize" / "row_diff_batch.cu", None,
                                 [{"w": 37, "h": 5, "batch": 2}, {"w": 70, "h": 9, "batch": 2},
                                  {"w": 4, "h": 3, "batch": 2}]),
    "vectorize:vblur_batch": (HERE / "stream" / "vblur_batch.cu", None, [{"w": 37, "h": 9, "batch": 2},
                                                                         {"w": 5, "h": 3, "batch": 2}]),
    # 24-bit multiplies (__umul24 in a grid-stride loop, __mul24 behind IMUL) read as products
    # 16-bit storage (emulation.h's __half and __nv_bfloat16): 2-, 4- and 8-wide raw words, elementwise
    # (1D and pitched 2D) and along a row
    "vectorize:add_gelu_half": (HERE / "vectorize" / "add_gelu_half.cu", None, [{"n": 4099}, {"n": 13}]),
    "vectorize:tint_half": (HERE / "vectorize" / "tint_half.cu", None, [{"width": 37, "height": 5, "pitch": 40},
                                                                     {"width": 70, "height": 3, "pitch": 70}]),
    "vectorize:bf16_residual": (HERE / "vectorize" / "bf16_residual.cu", None, [{"N": 4099}, {"N": 13}]),
    "vectorize:bf16_rows": (HERE / "vectorize" / "bf16_rows.cu", None, [{"rows": 5, "cols": 1001}, {"rows": 3, "cols": 40}]),
    "row-parallel:bf16_rows": (HERE / "vectorize" / "bf16_rows.cu", None, [{"rows": 5, "cols": 1001}]),
    "vectorize:mul24_scale": (HERE / "vectorize" / "mul24_scale.cu", None, [{"N": 4097}, {"N": 13}]),
    "row-parallel:mul24_rowsums": (HERE / "rowpar" / "mul24_rowsums.cu", None, [{"rows": 37, "cols": 101},
                                                                               {"rows": 5, "cols": 3}]),
    "vectorize:global_id_helpers": (HERE / "vectorize" / "global_id_helpers.cu", None, [{"n": 4097}, {"n": 13}]),
}

# row-parallel on kernels that test a spelling (the samples' cases run every block): a warp and a
# block per row, at 128 threads
_ONE_BLOCK = lambda p: p["block"] == 128  # noqa: E731
SUBSETS = {  # the misaligned and transposed gemms: double-buffered, square micro-tiles; the spellings: one tiling
    "register-tile:gemm_ld": lambda p: p["stages"] == 2 and p["tm"] == p["tn"],
    "register-tile:gemm_tn": lambda p: p["stages"] == 2 and p["tm"] == p["tn"],
    "register-tile:gemm_batched": lambda p: p["tm"] == p["tn"] and p["bk"] == 8,
    "register-tile:sgemm_accessors": lambda p: p["stages"] == 2 and p["tm"] == p["tn"] and p["bk"] == 8,
    "register-tile:matmul_block_literal": lambda p: p["stages"] == 2 and p["tm"] == p["tn"] and p["bk"] == 8,
    "register-tile:matmul/fma-accumulate": lambda p: p["tile"] == 64 and p["bk"] == 8 and p["stages"] == 2,
    "register-tile:matmul_template": lambda p: p["tile"] == 64 and p["bk"] == 8 and p["stages"] == 2,
    "register-tile:matmul/row-pointer": lambda p: p["tile"] == 64 and p["bk"] == 8 and p["stages"] == 2,
    **{f"row-parallel:{name}": _ONE_BLOCK for name in (
        "batched_dot", "rowsum_int64", "argmax_rows", "argmin_ties", "softmax_select", "masked_rownorm",
        "template_softmax", "layernorm_welford", "welford_helper", "rowsum_ptr_helper", "welford_stats",
        "mul24_rowsums", "encoder_bt")},
}


def _prepare(case: str, work: Path) -> Program:
    rule, spelled = case.split(":")[0], case.partition("/")[2]
    source, first, sizes = CASES[case]
    path = work / source.name
    if first is None:
        for suffix in (".cu", ".cuopt.toml"):
            shutil.copy(source.with_suffix(suffix), work)
        if spelled:
            text = SPELLINGS[spelled](path.read_text())
            assert text is not None, f"{spelled} does not apply to {source.name}"
            path.write_text(text)
    else:
        steps = [arg for action in first.split(" + ") for arg in ("-a", action)]
        result = cuopt("rewrites", str(source), *steps, "-o", str(path))
        assert result.exit_code == 0, result.output
    target = collect([path])[0]
    ctx = rewrite_contexts(path)[0]
    offers = [o for o in Engine.default().offers(ctx, only={rule})
              if case not in SUBSETS or SUBSETS[case](o.action.param_dict)]
    assert offers, f"{rule} does not apply to {path.name}"
    variants = [Variant(o.action.id, o.result.source, o.result.launch) for o in offers]
    return program(target, variants, sizes, work / "emulated")


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str] | str]:
    """Every case's differences; the programs build and run side by side, one per CPU."""
    prepared: dict[str, Program | str] = {}
    for case in CASES:
        try:
            prepared[case] = _prepare(case, tmp_path_factory.mktemp("emulated"))
        except AssertionError as exc:
            prepared[case] = str(exc)
    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        runs = {case: pool.submit(differences, p) for case, p in prepared.items() if isinstance(p, Program)}
        return {case: runs[case].result() if case in runs else p for case, p in prepared.items()}


@pytest.mark.parametrize("case", list(CASES))
def test_every_rewrite_of_the_rule_computes_what_the_original_does(verdicts: dict[str, dict[str, str] | str],
                                                                   case: str) -> None:
    found = verdicts[case]
    assert not isinstance(found, str), found
    assert not found
