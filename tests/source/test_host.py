"""Host code analysis: launch block and grid, cudaMalloc counts, cudaMemcpy directions and scalar values,
in the spellings real programs use; macros come from explicit tables."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.source.preprocess import NO_MACROS, Macros, macros_of
from cuopt.source.host import HostBuffer, HostLaunch, HostScalar, host_launch, kernel_macros
from cuopt.source.kernels import load
from cuopt.spec import expr as E

from tests.helpers import macro_table

POLYBENCH = """\
#include <stdio.h>
#include <stdlib.h>
#define NI 512
#define NJ 512
#define NK 512
#define DIM_THREAD_BLOCK_X 32
#define DIM_THREAD_BLOCK_Y 8
#define DATA_TYPE float

__global__ void gemm_kernel(float *a, float *b, float *c, float alpha, float beta)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if ((row < NI) && (col < NJ)) {
        c[row * NJ + col] *= beta;
        for (int p = 0; p < NK; p++)
            c[row * NJ + col] += alpha * a[row * NK + p] * b[p * NJ + col];
    }
}

void gemm_on_device(DATA_TYPE* A, DATA_TYPE* B, DATA_TYPE* C, DATA_TYPE* C_from_gpu)
{
    DATA_TYPE *A_gpu;
    DATA_TYPE *B_gpu;
    DATA_TYPE *C_gpu;
    DATA_TYPE alpha = 1.5;
    DATA_TYPE beta = 1.25;
    cudaMalloc((void **)&A_gpu, sizeof(DATA_TYPE) * NI * NK);
    cudaMalloc((void **)&B_gpu, sizeof(DATA_TYPE) * NK * NJ);
    cudaMalloc((void **)&C_gpu, sizeof(DATA_TYPE) * NI * NJ);
    cudaMemcpy(A_gpu, A, sizeof(DATA_TYPE) * NI * NK, cudaMemcpyHostToDevice);
    cudaMemcpy(B_gpu, B, sizeof(DATA_TYPE) * NK * NJ, cudaMemcpyHostToDevice);
    cudaMemcpy(C_gpu, C, sizeof(DATA_TYPE) * NI * NJ, cudaMemcpyHostToDevice);
    dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
    dim3 grid((size_t)(ceil( ((float)NI)/ ((float)block.x) )),(size_t)(ceil( ((float)NJ)/ ((float)block.y) )));
    gemm_kernel<<< grid, block >>>(A_gpu, B_gpu, C_gpu, alpha, beta);
    cudaDeviceSynchronize();
    cudaMemcpy(C_from_gpu, C_gpu, sizeof(DATA_TYPE) * NI * NJ, cudaMemcpyDeviceToHost);
    cudaFree(A_gpu);
    cudaFree(B_gpu);
    cudaFree(C_gpu);
}

int main()
{
    DATA_TYPE* A = (DATA_TYPE*)malloc(NI*NK*sizeof(DATA_TYPE));
    DATA_TYPE* B = (DATA_TYPE*)malloc(NK*NJ*sizeof(DATA_TYPE));
    DATA_TYPE* C = (DATA_TYPE*)malloc(NI*NJ*sizeof(DATA_TYPE));
    DATA_TYPE* C_out = (DATA_TYPE*)malloc(NI*NJ*sizeof(DATA_TYPE));
    gemm_on_device(A, B, C, C_out);
    return 0;
}
"""

POLYBENCH_MACROS = macro_table({"NI": "512", "NJ": "512", "NK": "512", "DIM_THREAD_BLOCK_X": "32",
                           "DIM_THREAD_BLOCK_Y": "8", "DATA_TYPE": "float"})

SAMPLES_STYLE = """\
#include <cuda_runtime.h>
#include <stdlib.h>

__global__ void vectorAdd(const float *A, const float *B, float *C, int numElements)
{
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < numElements) C[i] = A[i] + B[i];
}

int main(void)
{
    int numElements = 50000;
    size_t size = numElements * sizeof(float);
    float *h_A = (float *)malloc(size);
    float *h_B = (float *)malloc(size);
    float *h_C = (float *)malloc(size);
    float *d_A = NULL;
    cudaMalloc((void **)&d_A, size);
    float *d_B = NULL;
    cudaMalloc((void **)&d_B, size);
    float *d_C = NULL;
    cudaMalloc((void **)&d_C, size);
    cudaMemcpy(d_A, h_A, size, cudaMemcpyHostToDevice);
    cudaMemcpy(d_B, h_B, size, cudaMemcpyHostToDevice);
    int threadsPerBlock = 256;
    int blocksPerGrid = (numElements + threadsPerBlock - 1) / threadsPerBlock;
    vectorAdd<<<blocksPerGrid, threadsPerBlock>>>(d_A, d_B, d_C, numElements);
    cudaMemcpy(h_C, d_C, size, cudaMemcpyDeviceToHost);
    return 0;
}
"""

SCALE = """\
__global__ void scale(float *x, float alpha, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= alpha;
}
"""


def launch(source: str, kernel: str, macros: Macros = NO_MACROS) -> HostLaunch:
    k = load(source).kernel(kernel)
    assert k is not None
    found = host_launch(source.encode(), k, macros)
    assert found is not None
    return found


def program(grid: str = "(n + 255) / 256", block: str = "256", before: str = "", helpers: str = "",
            alloc: str = "cudaMalloc(&d_x, n * sizeof(float));") -> str:
    """SCALE with a main() that launches it `scale<<<grid, block>>>(d_x, 2.0f, n)`."""
    return (SCALE + helpers + "\nint main()\n{\n    int n = 1000;\n    float *d_x;\n    " + alloc + "\n    "
            + before + f"\n    scale<<<{grid}, {block}>>>(d_x, 2.0f, n);\n    return 0;\n}}\n")


def test_polybench_gemm() -> None:
    got = launch(POLYBENCH, "gemm_kernel", POLYBENCH_MACROS)
    assert got.line == 36 and got.block == (32, 8)
    assert [str(g) for g in got.grid] == ["cdiv(NI, block.x)", "cdiv(NJ, block.y)"]
    assert got.sizes == {"NI": 512, "NJ": 512, "NK": 512}
    assert got.args["a"] == HostBuffer(E.parse("NI * NK"), True, False, False)
    assert got.args["b"] == HostBuffer(E.parse("NJ * NK"), True, False, False)
    assert got.args["c"] == HostBuffer(E.parse("NI * NJ"), True, True, False)
    assert got.args["alpha"] == HostScalar(1.5) and got.args["beta"] == HostScalar(1.25)
    assert got.notes == () and got.others == ()


def test_polybench_without_macros_says_what_it_could_not_follow() -> None:
    got = launch(POLYBENCH, "gemm_kernel")
    assert got.block is None and got.grid is None and got.sizes == {}
    assert got.notes == ("the block `block` of the launch at line 36 is not a constant",)
    assert got.args["a"].count is None and "sizeof(DATA_TYPE) * NI * NK" in got.args["a"].note
    assert got.args["a"].copied_in and got.args["c"].copied_out


def test_kernel_macros_are_the_integer_macros_the_body_uses() -> None:
    kernel = load(POLYBENCH).kernel("gemm_kernel")
    assert kernel_macros(kernel, POLYBENCH_MACROS) == {"NI": 512, "NJ": 512, "NK": 512}
    # through other macros to the integer literals; macros with other replacements are expressions, not sizes
    assert kernel_macros(kernel, macro_table({"NI": "512", "NJ": "NI", "NK": "(1 << 9)"})) == {"NI": 512}
    assert kernel_macros(kernel) == {}


def test_cuda_samples_vector_add() -> None:
    got = launch(SAMPLES_STYLE, "vectorAdd")
    assert got.block == (256,) and [str(g) for g in got.grid] == ["cdiv(numElements, block.x)"]
    assert got.sizes == {"numElements": 50000}
    assert got.args["numElements"] == HostScalar(E.Name("numElements"))
    assert got.args["A"] == HostBuffer(E.Name("numElements"), True, False, False)
    assert got.args["C"] == HostBuffer(E.Name("numElements"), False, True, False)


@pytest.mark.parametrize("grid", [
    "(n + 255) / 256", "(n + 256 - 1) / 256", "n / 256 + (n % 256 != 0)", "n / 256 + (n % 256 ? 1 : 0)",
    "(n - 1) / 256 + 1", "ceil((float)n / 256)", "(size_t)(ceil(((float)n) / ((float)256)))",
    "dim3((n + 255) / 256)", "dim3((n + 255) / 256, 1, 1)", "DIV_UP(n, 256)", "iDivUp(n, 256)", "cdiv(n, 256)",
    "blocks", "g",
])
def test_grid_spellings_are_cdiv_over_the_block(grid: str) -> None:
    helpers = ("\n#define DIV_UP(a, b) (((a) + (b) - 1) / (b))\n"
               "static int iDivUp(int a, int b) { return (a % b != 0) ? (a / b + 1) : (a / b); }\n"
               "static int cdiv(int a, int b) { return (a + b - 1) / b; }\n")
    macros = macro_table(functions={"DIV_UP": (("a", "b"), "(((a) + (b) - 1) / (b))")})
    before = "int blocks = (n + 255) / 256;\n    dim3 g(blocks);"
    got = launch(program(grid, before=before, helpers=helpers), "scale", macros)
    assert got.block == (256,)
    assert [str(g) for g in got.grid] == ["cdiv(n, block.x)"], grid


def test_a_floor_division_grid_stays_a_floor_division() -> None:
    got = launch(program("n / 256"), "scale")
    assert [str(g) for g in got.grid] == ["n // block.x"]
    got = launch(program("n / 256 + 1"), "scale")
    assert [str(g) for g in got.grid] == ["n // block.x + 1"]


@pytest.mark.parametrize("block, before, want", [
    ("256", "", (256,)),
    ("BS", "", (128,)),
    ("threads", "int threads = BS * 2;", (256,)),
    ("b", "dim3 b(DIM_X, DIM_Y);", (32, 8)),
    ("b", "dim3 b = dim3(32, 8);", (32, 8)),
    ("b", "dim3 b{16, 16};", (16, 16)),
    ("b", "dim3 b(64, 1, 1);", (64,)),
    ("dim3(8, 8, 4)", "", (8, 8, 4)),
    ("b", "dim3 b; b.x = 64; b.y = 4;", (64, 4)),
])
def test_block_spellings(block: str, before: str, want: tuple[int, ...]) -> None:
    macros = macro_table({"BS": "128", "DIM_X": "32", "DIM_Y": "8"})
    assert launch(program("1", block, before), "scale", macros).block == want


def test_a_block_set_at_run_time_is_a_note() -> None:
    got = launch(program("1", "atoi(argv[1])"), "scale")
    assert got.block is None and got.grid is None
    assert "is not a constant" in got.notes[0]


def test_grid_over_block_fields() -> None:
    before = "dim3 b(32, 8);\n    dim3 g((n + b.x - 1) / b.x, (n + b.y - 1) / b.y);"
    got = launch(program("g", "b", before), "scale")
    assert got.block == (32, 8)
    assert [str(g) for g in got.grid] == ["cdiv(n, block.x)", "cdiv(n, block.y)"]


@pytest.mark.parametrize("alloc", [
    "cudaMalloc(&d_x, n * sizeof(float));",
    "cudaMalloc((void**)&d_x, sizeof(float) * n);",
    "cudaMalloc((void **)&d_x, n*sizeof(DATA_TYPE));",
    "cudaMalloc(reinterpret_cast<void **>(&d_x), n * sizeof(*d_x));",
    "size_t bytes = sizeof(float) * n; cudaMalloc(&d_x, bytes);",
    "cudaMallocManaged(&d_x, n * 4);",
    "cudaMalloc(&d_x, n * sizeof(double) / 2);",
])
def test_malloc_spellings_give_the_element_count(alloc: str) -> None:
    got = launch(program(alloc=alloc), "scale", macro_table({"DATA_TYPE": "float"}))
    assert got.args["x"].count == E.Name("n"), alloc


@pytest.mark.parametrize("alloc, reason", [
    ("cudaMalloc(&d_x, n * sizeof(T));", "sizeof(T) in cudaMalloc has no known size"),
    ("cudaMalloc(&d_x, n * 2);", "is not a whole number of float elements"),
    ("cudaMalloc(&d_x, bytes_for(n));", "not understood"),
    ("", "no cudaMalloc of d_x found"),
])
def test_malloc_not_understood_says_why(alloc: str, reason: str) -> None:
    got = launch(program(alloc=alloc), "scale")
    assert got.args["x"].count is None and reason in got.args["x"].note


def test_copies_and_memset() -> None:
    copies = "cudaMemcpy(d_x, h, n * 4, cudaMemcpyHostToDevice);"
    assert launch(program(before=copies), "scale").args["x"].copied_in
    got = launch(program(before="cudaMemset(d_x, 0, n * sizeof(float));"), "scale").args["x"]
    assert got.zeroed and not got.copied_in
    got = launch(program(before="cudaMemset(d_x, 1, n * sizeof(float));"), "scale").args["x"]
    assert not got.zeroed
    got = launch(program(before="cudaMemcpy(h, d_x, n * 4, cudaMemcpyDeviceToHost);"), "scale").args["x"]
    assert got.copied_out and not got.copied_in


def test_scalars_literal_macro_variable_and_run_time() -> None:
    src = """\
__global__ void fill(float *x, float alpha, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < NI && m > 0) x[i] = alpha * n;
}

int main(int argc, char **argv)
{
    int ni = NI;
    int m = atoi(argv[1]);
    float *d_x;
    cudaMalloc(&d_x, NI * sizeof(float));
    fill<<<(NI + 255) / 256, 256>>>(d_x, ALPHA, ni, m);
    return 0;
}
"""
    got = launch(src, "fill", macro_table({"NI": "4096", "ALPHA": "32412.0f"}))
    assert got.args["alpha"] == HostScalar(32412.0)
    assert got.args["n"] == HostScalar(E.Name("NI"))
    assert got.args["m"].value == E.Name("m") and "set at run time" in got.args["m"].note
    assert got.sizes == {"NI": 4096}
    assert [str(g) for g in got.grid] == ["cdiv(NI, block.x)"]
    assert got.args["x"].count == E.Name("NI")


def test_a_float_scalar_set_at_run_time_has_no_value() -> None:
    src = program().replace("(d_x, 2.0f, n)", "(d_x, atof(argv[1]), n)")
    got = launch(src, "scale").args["alpha"]
    assert got.value is None and "atof(argv[1])" in got.note


def test_launch_in_a_helper_follows_the_call_site() -> None:
    src = SCALE + """
void run(float *buf, int count, dim3 block)
{
    scale<<<(count + block.x - 1) / block.x, block>>>(buf, 0.5f, count);
}

int main()
{
    int n = 1 << 20;
    float *d_x;
    cudaMalloc(&d_x, n * sizeof(float));
    cudaMemcpy(d_x, h, n * sizeof(float), cudaMemcpyHostToDevice);
    run(d_x, n, dim3(128));
    cudaMemcpy(h, d_x, n * sizeof(float), cudaMemcpyDeviceToHost);
    return 0;
}
"""
    got = launch(src, "scale")
    assert got.block == (128,) and [str(g) for g in got.grid] == ["cdiv(n, block.x)"]
    assert got.args["n"] == HostScalar(E.Name("n")) and got.sizes == {"n": 1 << 20}
    assert got.args["x"] == HostBuffer(E.Name("n"), True, True, False)
    assert got.args["alpha"] == HostScalar(0.5)


def test_two_launches_take_the_first_and_list_the_others() -> None:
    src = program(before="scale<<<(n + 63) / 64, 64>>>(d_x, 3.0f, n);")
    got = launch(src, "scale")
    assert got.block == (64,) and got.line == 12 and got.others == (13,)
    assert got.args["alpha"] == HostScalar(3.0)


def test_a_kernel_launched_nowhere_has_no_host_launch() -> None:
    kernel = load(SCALE).kernels[0]
    assert host_launch(SCALE.encode(), kernel) is None


@pytest.mark.parametrize("grid", ["CEIL_DIV(8 * 1024, 256)", "(8 * 1024 + 255) / 256"])
def test_a_rounded_up_division_of_constants_is_cdiv_over_the_block(grid: str) -> None:
    source = ("#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))\n"
              "__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 0.0f; }\n"
              f"int main() {{ float* y; cudaMalloc(&y, 8192 * sizeof(float)); k<<<{grid}, 256>>>(y, 8192); return 0; }}\n")
    data = source.encode()
    macros = macros_of(data, Path("k.cu"))
    [kernel] = load(data, macros).kernels
    launch = host_launch(data, kernel, macros)
    assert [str(g) for g in launch.grid] == ["cdiv(8 * 1024, block.x)"]


ROWS = """\
__global__ void row_scale(const float* in, float* out, int cols)
{
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[blockIdx.x * cols + c] = 2.0f * in[blockIdx.x * cols + c];
}
"""


def test_a_grid_from_the_wrapper_s_parameter_is_a_size_set_at_run_time() -> None:
    """`launch(..., int rows, ...) { k<<<rows, 256, 0, stream>>>(...); }`, called from nowhere in the
    file: the grid is the size `rows`, free (no value here), where it was not understood."""
    src = ROWS + "void launch(const float* in, float* out, int rows, int cols, cudaStream_t s)\n" \
                 "{\n    row_scale<<<rows, 256, 0, s>>>(in, out, cols);\n}\n"
    got = launch(src, "row_scale")
    assert [str(g) for g in got.grid] == ["rows"] and got.free == ("rows",) and "rows" not in got.sizes


def test_a_caller_s_value_wins_over_a_free_size() -> None:
    src = ROWS + "void launch(const float* in, float* out, int rows, int cols)\n" \
                 "{\n    row_scale<<<rows, 256>>>(in, out, cols);\n}\n" \
                 "int main() { const int r = 512; launch(0, 0, r, 1024); return 0; }\n"
    got = launch(src, "row_scale")
    assert got.free == () and [str(g) for g in got.grid] == ["r"] and got.sizes["r"] == 512


def test_a_count_passed_as_an_expression_over_the_buffers_sizes_is_that_expression() -> None:
    # the kernel's n is the host's rows * C, with rows = B * T: at every check size n must stay the
    # buffers' length, so it is B * T * C rather than a size of its own
    source = SCALE + """
int main()
{
    const int B = 4, T = 64, C = 32;
    const int rows = B * T;
    float *d_x;
    cudaMalloc(&d_x, (size_t)rows * C * sizeof(float));
    scale<<<(rows * C + 255) / 256, 256>>>(d_x, 2.0f, rows * C);
    return 0;
}
"""
    found = launch(source, "scale")
    n = found.args["n"]
    assert isinstance(n, HostScalar) and isinstance(n.value, E.Expr)
    assert E.names(n.value) == {"B", "T", "C"} and "n" not in found.sizes
    assert E.evaluate(n.value, found.sizes) == 4 * 64 * 32


def test_a_count_of_its_own_stays_a_size() -> None:
    found = launch(program(), "scale")
    assert found.args["n"] == HostScalar(E.Name("n")) and found.sizes["n"] == 1000
