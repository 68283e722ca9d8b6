"""`cuopt init` on whole programs: what it takes from the host code, and `cuopt check` passes on every
spec it writes (with and without the macro table)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuopt.cli import app
from cuopt.source.preprocess import NO_MACROS, Macros
from cuopt.source.kernels import load
from cuopt.spec.infer import infer_all, render
from cuopt.spec.model import load as load_spec

from tests.conftest import ROOT, requires_nvcc
from tests.helpers import macro_table
from tests.source.test_host import POLYBENCH, POLYBENCH_MACROS, SAMPLES_STYLE, SCALE, program

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TWO_CONFIGS = program(before="scale<<<(n + 63) / 64, 64>>>(d_x, 3.0f, n);")


def init(cu: Path) -> str:
    result = CliRunner().invoke(app, ["init", str(cu)])
    assert result.exit_code == 0, result.output
    return cu.with_name(cu.stem + ".cuopt.toml").read_text()


def check(cu: Path, *extra: str) -> None:
    result = CliRunner().invoke(app, ["check", "--no-compile", *extra, str(cu)])
    assert result.exit_code == 0, result.output
    assert " 0 errors" in result.output


def written(tmp_path: Path, source: str, macros: Macros = NO_MACROS, name: str = "prog") -> tuple[Path, str]:
    """The spec `cuopt init` writes for `source` with a macro table (as the command will get one
    from the preprocessor)."""
    cu = tmp_path / f"{name}.cu"
    cu.write_text(source)
    text = render(infer_all(source.encode(), list(load(source, macros).kernels)), cu.name)
    cu.with_name(f"{name}.cuopt.toml").write_text(text)
    return cu, text


def test_samples_style_program(tmp_path: Path) -> None:
    cu = tmp_path / "vector_add.cu"
    cu.write_text(SAMPLES_STYLE)
    text = init(cu)
    spec = load_spec(tmp_path / "vector_add.cuopt.toml").kernels["vectorAdd"]
    assert spec.launch.block == (256,) and [str(g) for g in spec.launch.grid] == ["cdiv(numElements, block.x)"]
    assert spec.sizes == {"numElements": 50000}
    assert [str(a) for a in spec.args if hasattr(a, "role")] == [
        "in float32[numElements]", "in float32[numElements]", "out float32[numElements]"]
    assert "TODO" not in text.split("\n", 1)[1]
    check(cu)


def test_polybench_program_with_macros(tmp_path: Path) -> None:
    cu, text = written(tmp_path, POLYBENCH, POLYBENCH_MACROS)
    spec = load_spec(tmp_path / "prog.cuopt.toml").kernels["gemm_kernel"]
    assert spec.launch.block == (32, 8)
    assert [str(g) for g in spec.launch.grid] == ["cdiv(NI, block.x)", "cdiv(NJ, block.y)"]
    assert spec.sizes == {"NI": 512, "NJ": 512, "NK": 512}
    assert spec.check_sizes == ({"NI": 512, "NJ": 512, "NK": 512},) and not spec.check_sizes_derived
    assert [str(a) for a in spec.args[:3]] == ["in float32[NI * NK]", "in float32[NJ * NK]", "inout float32[NI * NJ]"]
    assert (spec.arg("alpha").value, spec.arg("beta").value) == (1.5, 1.25)
    assert "TODO" not in text.split("\n", 1)[1]
    check(cu)


def test_polybench_program_through_the_preprocessor(tmp_path: Path) -> None:
    """The command reads the file's own #defines: the dim3 block of macros and the macro sizes."""
    cu = tmp_path / "gemm.cu"
    cu.write_text(POLYBENCH)
    text = init(cu)
    spec = load_spec(tmp_path / "gemm.cuopt.toml").kernels["gemm_kernel"]
    assert spec.launch.block == (32, 8) and spec.sizes == {"NI": 512, "NJ": 512, "NK": 512}
    assert "TODO" not in text.split("\n", 1)[1]
    assert 'alpha = 1.5\n' in text
    check(cu)


def test_polybench_program_without_macros_still_checks(tmp_path: Path) -> None:
    cu, text = written(tmp_path, POLYBENCH.replace("#define", "// #define"))
    assert "# TODO: the block `block` of the launch at line 36 is not a constant" in text
    assert 'alpha = 1.5\n' in text
    check(cu)


def test_a_buffer_copied_in_and_written_is_inout(tmp_path: Path) -> None:
    """The kernel only stores to y, but the host copies y in first: the spec says inout."""
    src = """\
__global__ void copy(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 2) y[i] = x[i];
}

int main()
{
    int n = 4096;
    float *d_x, *d_y, *h = 0;
    cudaMalloc(&d_x, n * sizeof(float));
    cudaMalloc(&d_y, n * sizeof(float));
    cudaMemcpy(d_x, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(d_y, h, n * sizeof(float), cudaMemcpyHostToDevice);
    copy<<<(n / 2 + 127) / 128, 128>>>(d_x, d_y, n);
    cudaMemcpy(h, d_y, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(h, d_x, n * sizeof(float), cudaMemcpyDeviceToHost);
    return 0;
}
"""
    cu, text = written(tmp_path, src)
    assert 'x = "in float32[n]"' in text  # copied back, but the body never writes it
    assert 'y = "inout float32[n]"' in text
    assert 'grid = ["cdiv(n // 2, block.x)"]' in text
    check(cu)


def test_memset_buffer_accumulated_into_starts_at_zero(tmp_path: Path) -> None:
    cu, text = written(tmp_path, program(before="cudaMemset(d_x, 0, n * sizeof(float));"))
    assert 'x = "inout float32[n] zeros"' in text
    check(cu)


def test_two_launches_follow_the_first_and_say_so(tmp_path: Path) -> None:
    cu, text = written(tmp_path, TWO_CONFIGS)
    assert "block = [64]  # from the launch at line 12" in text
    assert "# note: scale is also launched at line 13; block, grid and arguments follow the first launch" in text
    assert "alpha = 3.0\n" in text
    check(cu)


ROUNDED_DOWN = """
#define N SIZE
__global__ void vadd(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
int main()
{
    float *a, *b, *c;
    cudaMalloc(&a, N * sizeof(float)); cudaMalloc(&b, N * sizeof(float)); cudaMalloc(&c, N * sizeof(float));
    vadd<<<N / 256, 256>>>(a, b, c, N);
    return 0;
}
"""


@pytest.mark.parametrize("size, grid", [("(1 << 20)", "cdiv(n, block.x)"), ("1000", "n // block.x")])
def test_a_grid_rounded_down_over_a_guarded_kernel_covers_the_guard(tmp_path: Path, size: str, grid: str) -> None:
    # `<<<N / 256, 256>>>` covers n when n is a multiple of 256: the spec covers the guard's range,
    # so variants are checked at other sizes too; where the grids differ at the program's own
    # sizes, the spec keeps the launch as written
    cu = tmp_path / "vadd.cu"
    cu.write_text(ROUNDED_DOWN.replace("SIZE", size))
    text = init(cu)
    assert f'grid = ["{grid}"]' in text
    assert ("rounds down (n // block.x)" in text) is (grid != "n // block.x")
    check(cu)


def test_kernel_launched_nowhere_falls_back_to_the_body(tmp_path: Path) -> None:
    cu, text = written(tmp_path, SCALE)
    assert "block = [256]\n" in text and 'grid = ["cdiv(n, block.x)"]' in text
    assert "alpha = 1.0  # TODO: value of this scalar" in text
    check(cu)


def test_run_time_values_stay_todos(tmp_path: Path) -> None:
    src = program().replace("int n = 1000;", "int n = atoi(argv[1]);").replace(
        "(d_x, 2.0f, n)", "(d_x, atof(argv[2]), n)").replace("int main()", "int main(int argc, char **argv)")
    cu, text = written(tmp_path, src)
    assert 'n = "n"  # TODO: the host passes n, set at run time; pick a size' in text
    assert "alpha = 1.0  # TODO: value of this scalar (the host passes atof(argv[2])" in text
    assert "(guessed: n)" in text
    check(cu)


def test_macro_size_not_a_parameter_without_macros_is_a_guessed_size(tmp_path: Path) -> None:
    """A kernel bounded by a macro the table does not know still gets a spec that checks."""
    src = SCALE.replace("if (i < n)", "if (i < N)")
    cu, text = written(tmp_path, src)
    check(cu)
    cu, text = written(tmp_path, src, macro_table({"N": "1000"}))
    assert "N checked at the source's value only" in text and "size N is fixed by `#define N 1000`" in text
    check(cu)


def test_a_scalar_passed_a_macro_size(tmp_path: Path) -> None:
    src = """\
__global__ void fill(float *x, int ni)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < NI) x[i] = ni;
}

int main()
{
    int ni = NI;
    float *d_x;
    cudaMalloc(&d_x, NI * sizeof(float));
    fill<<<(NI + 255) / 256, 256>>>(d_x, ni);
    return 0;
}
"""
    cu, text = written(tmp_path, src, macro_table({"NI": "4096"}))
    assert 'ni = "NI"' in text and "sizes = { NI = 4096 }" in text
    check(cu)


@pytest.mark.parametrize("source", [POLYBENCH, SAMPLES_STYLE, TWO_CONFIGS], ids=["polybench", "samples", "two"])
@requires_nvcc
def test_written_specs_pass_check_with_nvcc(tmp_path: Path, source: str) -> None:
    macros = POLYBENCH_MACROS if source is POLYBENCH else NO_MACROS
    cu, _ = written(tmp_path, source, macros)
    result = CliRunner().invoke(app, ["check", str(cu)])
    assert " 0 errors" in result.output, result.output
    tomllib.loads(cu.with_name("prog.cuopt.toml").read_text())


FUNCTORS = """\
struct Sigmoid { __device__ float operator()(float x) const { return 1.0f / (1.0f + expf(-x)); } };

template <typename T, typename UnaryOp>
__global__ void unary_map(const T *in, T *out, int n, UnaryOp op)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = op(in[i]);
}

template <typename T>
__global__ void axpby(const T *x, const T *y, T *z, int n, T a, T b)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = a * x[i] + b * y[i];
}

__global__ void scale(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}

void run(const float *x, float *y, float *z, int n)
{
    unary_map<float, Sigmoid><<<(n + 255) / 256, 256>>>(x, y, n, Sigmoid());
    axpby<float><<<(n + 255) / 256, 256>>>(x, y, z, n, 2.0f, 3.0f);
    scale<<<(n + 255) / 256, 256>>>(x, y, n);
}
"""
SKIPPED = ("kernel unary_map<float, Sigmoid> skipped: parameter op has type 'UnaryOp (Sigmoid)', which a spec cannot "
           "pass (it passes numbers and pointers to them); cuopt cannot run it")


def test_a_kernel_with_a_functor_argument_is_left_out_and_the_spec_checks(tmp_path: Path) -> None:
    cu = tmp_path / "functors.cu"
    cu.write_text(FUNCTORS)
    result = CliRunner().invoke(app, ["init", str(cu)])
    assert result.exit_code == 0, result.output
    assert result.stderr == f"{cu}:4: {SKIPPED}\n"
    assert f"wrote {tmp_path / 'functors.cuopt.toml'} (2 kernels," in result.stdout
    text = (tmp_path / "functors.cuopt.toml").read_text()
    assert "# unary_map<float, Sigmoid> (line 4) is left out: parameter op has type 'UnaryOp (Sigmoid)'" in text
    assert list(load_spec(tmp_path / "functors.cuopt.toml").kernels) == ["axpby_float", "scale"]
    check(cu)


def test_commands_over_the_whole_file_skip_the_kernel_init_left_out(tmp_path: Path) -> None:
    from cuopt.targets import collect

    cu = tmp_path / "functors.cu"
    cu.write_text(FUNCTORS)
    init(cu)
    warnings: list[str] = []
    targets = collect([cu], None, warnings)
    assert [t.kernel.entry for t in targets] == ["axpby<float>", "scale"]
    assert warnings == [f"{cu}:4: {SKIPPED}"]
    assert [t.kernel.entry for t in collect([cu], "axpby", [])] == ["axpby<float>"]


def test_an_old_spec_with_a_table_for_such_a_kernel_no_longer_stops_the_file(tmp_path: Path) -> None:
    from cuopt.targets import collect

    cu = tmp_path / "functors.cu"
    cu.write_text(FUNCTORS)
    text = init(cu)
    (tmp_path / "functors.cuopt.toml").write_text(text + """
[unary_map_float_Sigmoid]
kernel = "unary_map<float, Sigmoid>"
block = [256]
grid = ["cdiv(n, block.x)"]
sizes = { n = 1024 }

[unary_map_float_Sigmoid.args]
in = "in float32[n]"
out = "out float32[n]"
n = "n"
op = 1.0
""")
    warnings: list[str] = []
    assert [t.kernel.entry for t in collect([cu], None, warnings)] == ["axpby<float>", "scale"]
    assert warnings == [f"{cu}:4: {SKIPPED} (remove its table [unary_map_float_Sigmoid] from functors.cuopt.toml)"]
    result = CliRunner().invoke(app, ["check", "--no-compile", str(cu)])  # the table is still an error
    assert result.exit_code == 1 and "args.op: parameter type 'UnaryOp (Sigmoid)' is not supported" in result.output


@requires_nvcc
def test_bench_dry_run_times_the_kernels_init_described(tmp_path: Path) -> None:
    cu = tmp_path / "functors.cu"
    cu.write_text(FUNCTORS)
    init(cu)
    result = CliRunner().invoke(app, ["bench", str(cu), "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    assert [r["kernel"] for r in json.loads(result.stdout)] == ["axpby<float>", "scale"]
    assert result.stderr.count("\n") == 1 and SKIPPED in result.stderr


def test_specs_init_writes_for_index_buffers_and_vector_types_check(tmp_path: Path) -> None:
    """Counts and inits for float2 buffers, labels, CSR arrays and clamped stencils all pass check."""
    from tests.spec.test_infer import CMUL, CROSS_ENTROPY, ROWDOT, SPMV

    for name, source in {"cmul": CMUL, "xent": CROSS_ENTROPY, "rowdot": ROWDOT, "spmv": SPMV}.items():
        cu = tmp_path / f"{name}.cu"
        cu.write_text(source)
        init(cu)
        check(cu)


def test_a_read_only_buffer_the_host_zeroes_keeps_random_data(tmp_path: Path) -> None:
    cu = tmp_path / "k.cu"
    cu.write_text("""__global__ void saturate(const unsigned int* h, unsigned int* out, int bins)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < bins) out[i] = min(h[i], 255u);
}
int main()
{
    int bins = 4096;
    unsigned int *h, *out;
    cudaMalloc(&h, bins * sizeof(unsigned int));
    cudaMalloc(&out, bins * sizeof(unsigned int));
    cudaMemset(h, 0, bins * sizeof(unsigned int));
    saturate<<<(bins + 255) / 256, 256>>>(h, out, bins);
    return 0;
}
""")
    text = init(cu)
    assert 'h = "in uint32[bins]"' in text  # zeros would make every variant agree with the original


def test_dynamic_shared_memory_comes_from_the_launch_or_is_a_todo(tmp_path: Path) -> None:
    kernel = """__global__ void block_sum(const float* in, float* out, int n)
{
    extern __shared__ float s[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}
"""
    cu = tmp_path / "k.cu"
    cu.write_text(kernel + """int main()
{
    int n = 1 << 20, threads = 256;
    float *in, *out;
    cudaMalloc(&in, n * sizeof(float));
    cudaMalloc(&out, (n / threads) * sizeof(float));
    block_sum<<<(n + threads - 1) / threads, threads, threads * sizeof(float)>>>(in, out, n);
    return 0;
}
""")
    assert 'shared = "256 * 4"' in init(cu)
    check(cu)
    alone = tmp_path / "alone.cu"
    alone.write_text(kernel)
    assert "# TODO: shared: the kernel uses extern __shared__ s" in init(alone)


def test_guessed_sizes_shrink_until_the_grid_can_be_launched(tmp_path: Path) -> None:
    cu = tmp_path / "lud.cu"
    cu.write_text("""__global__ void scale_col(float* m, int n, int k)
{
    int i = k + 1 + blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) m[i * n + k] /= m[k * n + k];
}
int main()
{
    int n = 2048;
    float* d_m;
    cudaMalloc(&d_m, n * n * sizeof(float));
    for (int k = 0; k < n - 1; k++) {
        int rest = n - k - 1;
        scale_col<<<(rest + 255) / 256, 256>>>(d_m, n, k);
    }
    return 0;
}
""")
    text = init(cu)  # k, a host loop counter, was guessed above n: the grid n - k - 1 went negative
    check(cu)
    sizes = tomllib.loads(text)["scale_col"]["sizes"]
    assert sizes["k"] < sizes["n"] - 1


def test_a_launch_that_passes_one_buffer_twice_marks_the_kernel_aliased(tmp_path: Path) -> None:
    cu = tmp_path / "k.cu"
    cu.write_text("""__global__ void residual(float* out, const float* a, const float* b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
int main()
{
    int n = 1 << 20;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    residual<<<(n + 255) / 256, 256>>>(x, x, y, n);
    return 0;
}
""")
    text = init(cu)
    assert 'aliased = ["out", "a"]' in text
    check(cu)
    result = CliRunner().invoke(app, ["rewrites", str(cu), "--why"])
    assert result.exit_code == 0 and "0 rewrites" in result.output
    assert "passes one buffer for out and a" in result.output


def test_a_block_per_row_over_a_host_constant(tmp_path: Path) -> None:
    """A grid of `rows` blocks, rows a host constant the kernel never gets: the grid is a size of
    that name (not the literal 4096), and a block-stride loop's reads reach `rows * n` elements (the
    host allocates nothing here, so the body's reach is the count)."""
    cu = tmp_path / "k.cu"
    cu.write_text("""__global__ void row_sums(const float* in, float* out, int n)
{
    __shared__ float s[256];
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) acc += in[blockIdx.x * n + i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int st = blockDim.x / 2; st > 0; st >>= 1) {
        if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
int main()
{
    const int rows = 4096, cols = 2048;
    float *in, *out;
    row_sums<<<rows, 256>>>(in, out, cols);
    return 0;
}
""")
    spec = tomllib.loads(init(cu))["row_sums"]
    assert spec["grid"] == ["rows"] and spec["sizes"] == {"n": 2048, "rows": 4096}
    assert spec["args"]["in"] == "in float32[n*rows]" and spec["args"]["out"] == "out float32[rows]"
    check(cu)



@pytest.mark.parametrize("kernel, bins", [
    # a byte read from memory indexes the bins: 256 of them
    ("__global__ void histo(const unsigned char* data, unsigned int* bins, int n)\n{\n"
     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) atomicAdd(&bins[data[i]], 1);\n}\n", 256),
    # through a local of a byte type (a char read as unsigned)
    ("__global__ void histo(const char* data, int* bins, int n)\n{\n"
     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
     "    if (i < n) {\n        unsigned char c = data[i];\n        atomicAdd(&bins[c], 1);\n    }\n}\n", 256),
    # a mask, a cast to a 16-bit unsigned type
    ("__global__ void histo(const int* data, int* bins, int n)\n{\n"
     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) atomicAdd(&bins[(data[i] >> 4) & 0x3f], 1);\n}\n", 64),
    ("__global__ void histo(const int* data, int* bins, int n)\n{\n"
     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) atomicAdd(&bins[(unsigned short)data[i]], 1);\n}\n",
     65536),
])
def test_an_index_its_type_or_a_mask_bounds_sizes_the_bins(tmp_path: Path, kernel: str, bins: int) -> None:
    cu = tmp_path / "k.cu"
    cu.write_text(kernel)
    args = tomllib.loads(init(cu))["histo"]["args"]
    assert args["bins"].split("[")[1].split("]")[0] == str(bins), args
    check(cu)


def test_a_grid_stride_while_loop_gives_the_grid_its_range(tmp_path: Path) -> None:
    """The books' histogram: a `while` grid-stride loop, launched on a grid the host computes at run
    time. init reads the loop as the `for` loop it is: one thread per index, with a TODO."""
    cu = tmp_path / "k.cu"
    kernel = (ROOT / "rules" / "privatize" / "cases" / "histo_while.cu").read_text()
    cu.write_text("#define SIZE (100 * 1024 * 1024)\n" + kernel + """
int main(void)
{
    unsigned char* d_bytes;
    unsigned int* d_bins;
    cudaMalloc((void**)&d_bytes, SIZE);
    cudaMalloc((void**)&d_bins, 256 * sizeof(int));
    cudaMemset(d_bins, 0, 256 * sizeof(int));
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    int sms = prop.multiProcessorCount;
    byte_histogram_while<<<sms * 2, 256>>>(d_bytes, SIZE, d_bins);
    return 0;
}
""")
    text = init(cu)
    spec = tomllib.loads(text)["byte_histogram_while"]
    assert spec["grid"] == ["cdiv(size, block.x)"] and "a grid-stride loop along x" in text
    assert spec["args"]["bins"] == "inout uint32[256] zeros"
    check(cu)


UNNAMED = """\
#include <type_traits>

template <bool Atomic>
__global__ void bias_grad(float* dbias, const float* dout, int rows, int cols, std::bool_constant<Atomic>)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.0f;
    for (int r = 0; r < rows; r++) s += dout[r * cols + c];
    if constexpr (Atomic) atomicAdd(&dbias[c], s); else dbias[c] += s;
}

__global__ void relu(float* out, const float* in, int n, int /*inplace*/, const float* /*unused*/)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaxf(in[i], 0.0f);
}

void run(float* dbias, float* out, const float* x, int rows, int cols)
{
    bias_grad<<<(cols + 127) / 128, 128>>>(dbias, x, rows, cols, std::bool_constant<true>{});
    relu<<<(rows * cols + 255) / 256, 256>>>(out, x, rows * cols, 0, nullptr);
}
"""


def test_unnamed_parameters_are_keyed_by_position_and_a_tag_parameter_leaves_the_kernel_out(tmp_path: Path) -> None:
    cu = tmp_path / "unnamed.cu"
    cu.write_text(UNNAMED)
    result = CliRunner().invoke(app, ["init", str(cu)])
    assert result.exit_code == 0, result.output
    assert f"{cu}:4: kernel bias_grad skipped: parameter unnamed-5 has type 'bool_constant<Atomic>'" in result.stderr
    text = (tmp_path / "unnamed.cuopt.toml").read_text()
    assert "# bias_grad (line 4) is left out: parameter unnamed-5 has type 'bool_constant<Atomic>'" in text
    args = tomllib.loads(text)["relu"]["args"]
    assert args["unnamed-4"] == "0" and args["unnamed-5"] == "in float32[1]"
    assert "unnamed" not in str(tomllib.loads(text)["relu"]["sizes"])
    check(cu)
    from cuopt.rewrite.engine import Engine
    from cuopt.targets import rewrite_contexts

    from cuopt.targets import collect

    warnings: list[str] = []
    assert [t.kernel.entry for t in collect([cu], None, warnings)] == ["relu"]
    assert len(warnings) == 1 and warnings[0].startswith(f"{cu}:4: kernel bias_grad skipped: parameter unnamed-5")
    (ctx,) = rewrite_contexts(cu, None, frozenset(), [])
    (offer,) = [o for o in Engine.default().offers(ctx) if o.action.rule == "restrict-const"]
    assert "int /*inplace*/, const float* __restrict__ /*unused*/)" in offer.result.source.decode()


@requires_nvcc
def test_a_kernel_with_unnamed_parameters_compiles_and_binds_in_bench(tmp_path: Path) -> None:
    cu = tmp_path / "unnamed.cu"
    cu.write_text(UNNAMED)
    init(cu)
    result = CliRunner().invoke(app, ["bench", str(cu), "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    assert [r["kernel"] for r in json.loads(result.stdout)] == ["relu"]


BF16_KERNELS = """#include <cuda_bf16.h>
{define}

__global__ void add_bias(floatX* out, const floatX* inp, const __nv_bfloat16* bias, int C, int N)
{{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) out[i] = (floatX)((float)inp[i] + __bfloat162float(bias[i % C]));
}}

__global__ void scale(nv_bfloat16* x, nv_bfloat16 s, int N)
{{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) x[i] = __hmul(x[i], s);
}}

int main()
{{
    const int C = 768, N = 8 * 1024 * 768;
    floatX *out, *inp, *bias;
    cudaMalloc(&out, N * sizeof(floatX));
    cudaMalloc(&inp, N * sizeof(floatX));
    cudaMalloc(&bias, C * sizeof(floatX));
    add_bias<<<(N + 255) / 256, 256>>>(out, inp, bias, C, N);
    scale<<<(N + 255) / 256, 256>>>(out, __float2bfloat16(0.5f), N);
    return 0;
}}
"""
# floatX spelled three ways; `bias` and `scale` are written with the bf16 types themselves
BF16_SPELLINGS = {"typedef": "typedef __nv_bfloat16 floatX;", "macro": "#define floatX __nv_bfloat16",
                  "switch": "#if defined(ENABLE_FP32)\ntypedef float floatX;\n#else\ntypedef __nv_bfloat16 floatX;\n#endif"}


@requires_nvcc
@pytest.mark.parametrize("define", BF16_SPELLINGS.values(), ids=BF16_SPELLINGS.keys())
def test_bf16_kernels_get_bfloat16_buffers_and_a_spec_that_checks(tmp_path: Path, define: str) -> None:
    cu = tmp_path / "bf16.cu"
    cu.write_text(BF16_KERNELS.format(define=define))
    spec = tomllib.loads(init(cu))
    assert spec["add_bias"]["args"] == {"out": "out bfloat16[N]", "inp": "in bfloat16[N]", "bias": "in bfloat16[C]",
                                        "C": "C", "N": "N"}
    assert spec["scale"]["args"]["x"] == "inout bfloat16[N]"
    assert isinstance(spec["scale"]["args"]["s"], float)
    result = CliRunner().invoke(app, ["check", str(cu)])  # nvcc compiles both kernels and their float64 twins
    assert result.exit_code == 0 and " 0 errors" in result.output, result.output
    result = CliRunner().invoke(app, ["bench", "--dry-run", "--json", str(cu)])
    assert result.exit_code == 0, result.output
    assert {r["kernel"]: r["reference"] for r in json.loads(result.stdout)} == {"add_bias": "float64",
                                                                                 "scale": "float64"}


@requires_nvcc
def test_a_template_kernel_instantiated_with_nv_bfloat16_compiles_with_its_float64_twin(tmp_path: Path) -> None:
    """The demangler prints the typedef nv_bfloat16 as __nv_bfloat16: the entry is found under either."""
    cu = tmp_path / "scale.cu"
    cu.write_text("#include <cuda_bf16.h>\ntemplate <typename T>\n__global__ void scale(T* x, T s, int n)\n{\n"
                  "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] = x[i] * s;\n}\n\n"
                  "int main()\n{\n    const int n = 1 << 20;\n    nv_bfloat16* x;\n"
                  "    cudaMalloc(&x, n * sizeof(nv_bfloat16));\n"
                  "    scale<nv_bfloat16><<<(n + 255) / 256, 256>>>(x, __float2bfloat16(2.0f), n);\n    return 0;\n}\n")
    assert 'x = "inout bfloat16[n]"' in init(cu)
    result = CliRunner().invoke(app, ["bench", "--dry-run", "--json", str(cu)])
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)
    assert (row["status"], row["reference"]) == ("compiled", "float64"), row
