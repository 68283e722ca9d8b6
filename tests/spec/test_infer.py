"""`cuopt init`: spec inference from the samples, compared with the hand-written specs; the CLI command."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuopt.cli import app
from cuopt.source.kernels import load as load_source
from cuopt.source.preprocess import macros_of
from cuopt.spec import expr as E
from cuopt.spec.bind import bind
from cuopt.spec.infer import infer, infer_in_file, render
from cuopt.spec.model import Buffer, KernelSpec, Launch, Scalar, load as load_spec, parse
from cuopt.targets import read_source

from tests.conftest import SAMPLES, sample_names

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def rendered(name: str) -> str:
    source = read_source(SAMPLES / f"{name}.cu")  # through its macros (covar's DATA_TYPE)
    return render([(k, infer(k)) for k in source.kernels], f"{name}.cu")


def inferred_spec(name: str) -> KernelSpec:
    return parse(tomllib.loads(rendered(name)), Path(f"{name}.cuopt.toml")).kernels[name]


def hand_spec(name: str) -> KernelSpec:
    return load_spec(SAMPLES / f"{name}.cuopt.toml").kernels[name]


def todo_args(text: str, kernel: str) -> set[str]:
    """Arguments whose line in [kernel.args] carries a TODO comment."""
    out, inside = set(), False
    for line in text.splitlines():
        if line.startswith("["):
            inside = line.strip() == f"[{kernel}.args]"
            continue
        if inside and "=" in line and "# TODO" in line:
            out.add(line.split("=", 1)[0].strip())
    return out


@pytest.mark.parametrize("name", sample_names())
def test_rendered_spec_parses_binds_and_evaluates(name: str) -> None:
    spec = inferred_spec(name)
    kernel = read_source(SAMPLES / f"{name}.cu").kernel(name)
    assert kernel is not None
    bound = bind(spec, kernel)
    insts = bound.instances()
    assert insts[0].label == "timing" and len(insts) >= 2
    assert all(g >= 1 for i in insts for g in i.grid)


@pytest.mark.parametrize("name", sample_names())
def test_buffers_have_the_hand_written_roles_and_dtypes(name: str) -> None:
    got, want = inferred_spec(name), hand_spec(name)
    assert [a.name for a in got.args] == [a.name for a in want.args]
    for w in want.args:
        g = got.arg(w.name)
        if isinstance(w, Buffer):
            assert isinstance(g, Buffer), w.name
            assert (g.role, g.dtype) == (w.role, w.dtype), w.name
        else:
            assert isinstance(g, Scalar), w.name


@pytest.mark.parametrize("name", sample_names())
def test_grid_matches_at_hand_written_sizes(name: str) -> None:
    got, want = inferred_spec(name), hand_spec(name)
    same_block = Launch(want.launch.block, got.launch.grid)
    assert same_block.grid3(want.sizes) == want.launch.grid3(want.sizes)


@pytest.mark.parametrize("name", sample_names())
def test_element_counts_cover_the_hand_written_ones(name: str) -> None:
    text = rendered(name)
    got = parse(tomllib.loads(text), Path(f"{name}.cuopt.toml")).kernels[name]
    want = hand_spec(name)
    todo = todo_args(text, name)
    for w in want.args:
        if not isinstance(w, Buffer) or w.name in todo:
            continue
        if (name, w.name) == ("stencil2d", "out"):
            # the kernel never writes the last row: h*w - w is the exact extent it touches
            assert str(got.arg(w.name).count) == "h * w - w"
            continue
        g = got.arg(w.name)
        assert isinstance(g, Buffer)
        for sizes in (want.sizes, *want.check_sizes):
            assert E.evaluate(g.count, sizes) >= E.evaluate(w.count, sizes), (w.name, str(g.count), str(w.count), sizes)


@pytest.mark.parametrize("name", sample_names())
def test_inferred_timing_sizes_fit_in_gpu_memory(name: str) -> None:
    """The sizes `cuopt init` proposes must give buffers a GPU can hold (the hand-written specs
    move at most 0.75 GiB); rows x cols kernels must not get 2**24 rows of 1024 columns."""
    spec = inferred_spec(name)
    kernel = read_source(SAMPLES / f"{name}.cu").kernel(name)
    assert kernel is not None
    timing = bind(spec, kernel).instances()[0]
    assert timing.bytes_moved() <= 2 << 30, (timing.sizes, timing.bytes_moved() / 2**30)


def test_scalar_float_gets_a_todo_and_eps_a_small_value() -> None:
    text = rendered("layernorm")
    assert "eps = 1e-05  # TODO" in text
    assert "a = 1.0  # TODO" in rendered("saxpy")


def test_an_index_read_as_bytes_counts_the_byte_range() -> None:
    """The histogram's bins are indexed by bytes read from memory: 256 of them, no TODO."""
    assert todo_args(rendered("histogram"), "histogram") == set()
    assert 'bins = "inout uint32[256] zeros"' in rendered("histogram")


@pytest.mark.parametrize("read,count", [
    ("if (start + j >= 0 && start + j < width) acc += x[start + j] * w[j];", "width"),  # PMPP's, as written
    ("int k = start + j; if (k >= 0 && k < width) acc += x[k] * w[j];", "width"),  # through a local
    ("acc += (start + j >= 0 && start + j < width) ? x[start + j] * w[j] : 0.0f;", "width"),
    ("if (width > start + j && start + j >= 0) acc += x[start + j] * w[j];", "width"),
    ("if (start + j >= 0 && start + j <= width) acc += x[start + j] * w[j];", "width + 1"),
    ("if (start + j >= 0 && start + j < width && x[start + j] > 0.0f) acc += w[j];", "width"),  # && short-circuits
    ("if (start + j >= 0 && j < width) acc += x[start + j] * w[j];", "2*width"),  # another index: start < width
    ("if (start + j >= 0 && j < width) acc += x[(start + j) ^ 1] * w[j];", None),  # not readable
    # the row pointer read as the parameter's subscript x[i * mw + j] (the normal form), as written so:
    # a check on part of the index, i < width with the if around the loop, j < width with this one
    ("const float* xs = x + i * mw; if (j < width) acc += xs[j] * w[j];", "mw*width + width - mw"),
])
def test_a_bounds_check_around_a_read_gives_its_count(read: str, count: str | None) -> None:
    """A read that runs only below a bound needs that many elements, where the index itself reaches
    further (the taps past the end are skipped), or the bound of another index plus what the rest
    of the index reaches."""
    source = load_source(f"""
__global__ void conv(const float* x, const float* w, float* y, int mw, int width) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < width) {{
        float acc = 0.0f;
        int start = i - mw / 2;
        for (int j = 0; j < mw; j++) {{ {read} }}
        y[i] = acc;
    }}
}}""")
    text = render([(source.kernels[0], infer(source.kernels[0]))], "k.cu")
    line = next(ln for ln in text.splitlines() if ln.startswith("x = "))
    if count is None:
        assert "TODO: element count not inferred" in line, line
    else:
        assert line.startswith(f'x = "in float32[{count}]"'), line


def test_a_checked_column_gives_its_row_count_and_no_grid_bound() -> None:
    """The row pass of a separable filter: `src[y * w + d]` under `d >= 0 && d < w` reaches `h * w`
    (not `h * w + R`), and the column check inside the tap loop bounds no axis of the grid."""
    source = load_source("""
__global__ void rows(float* dst, const float* src, const float* taps, int w, int h) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float sum = 0;
    for (int k = -8; k <= 8; k++) {
        const int d = x + k;
        if (d >= 0 && d < w) sum += src[y * w + d] * taps[8 - k];
    }
    dst[y * w + x] = sum;
}""")
    text = render([(source.kernels[0], infer(source.kernels[0]))], "k.cu")
    assert 'src = "in float32[h*w]"' in text, text
    assert 'grid = ["cdiv(w, block.x)", "cdiv(h, block.y)"]' in text, text
    sizes = next(ln for ln in text.splitlines() if ln.startswith("sizes ="))
    assert "k =" not in sizes and "not a kernel parameter" not in text, text


def test_an_index_spelled_with_static_cast_bounds_the_grid() -> None:
    source = load_source("""
__global__ void axpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
    const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= static_cast<size_t>(n)) return;
    y[i] = a * x[i] + y[i];
}""")
    text = render([(source.kernels[0], infer(source.kernels[0]))], "k.cu")
    assert 'grid = ["cdiv(n, block.x)"]' in text and 'y = "inout float32[n]"' in text, text


def test_an_atomic_address_spelled_as_a_pointer_sum_is_an_accumulated_buffer() -> None:
    source = load_source("""
__global__ void histogram_naive(const uint8_t* in, int* bins, size_t n) {
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (tid >= n) return;
    const uint8_t v = in[tid];
    atomicAdd(bins + v, 1);
}""")
    text = render([(source.kernels[0], infer(source.kernels[0]))], "k.cu")
    assert 'bins = "inout int32[' in text and "zeros" in text and 'in = "in uint8[n] randint(0, 256)"' in text, text


def test_kernel_without_guard_gets_a_grid_todo() -> None:
    source = load_source("__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }")
    text = render([(source.kernels[0], infer(source.kernels[0]))], "k.cu")
    assert 'grid = ["1"]' in text
    assert "# TODO: grid:" in text
    spec = parse(tomllib.loads(text), Path("k.cuopt.toml")).kernels["k"]
    bind(spec, source.kernels[0]).instances()


# -- the command ---------------------------------------------------------------------------------------
TWO = """\
__global__ void a(int n, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}

__global__ void b(int m, float* z)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) z[i] += 1.0f;
}
"""


def run(*args: str):
    return CliRunner().invoke(app, ["init", *args])


def test_init_writes_a_spec_that_bench_can_load(tmp_path: Path) -> None:
    cu = tmp_path / "two.cu"
    cu.write_text(TWO)
    result = run(str(cu))
    assert result.exit_code == 0, result.output
    spec_path = tmp_path / "two.cuopt.toml"
    assert f"wrote {spec_path} (2 kernels" in result.stdout
    spec_file = load_spec(spec_path)
    assert list(spec_file.kernels) == ["a", "b"]
    source = load_source(TWO)
    for name, spec in spec_file.kernels.items():
        kernel = source.kernel(name)
        assert kernel is not None
        bind(spec, kernel).instances()


def test_init_never_overwrites_without_force(tmp_path: Path) -> None:
    cu = tmp_path / "two.cu"
    cu.write_text(TWO)
    spec_path = tmp_path / "two.cuopt.toml"
    spec_path.write_text("# mine\n")
    result = run(str(cu))
    assert result.exit_code == 1
    assert result.stderr.strip() == f"cuopt: error: {spec_path}: already exists; pass --force to overwrite it"
    assert spec_path.read_text() == "# mine\n"
    assert not (tmp_path / "two.cuopt.toml.tmp").exists()


def test_init_with_force_overwrites(tmp_path: Path) -> None:
    cu = tmp_path / "two.cu"
    cu.write_text(TWO)
    spec_path = tmp_path / "two.cuopt.toml"
    spec_path.write_text("# mine\n")
    result = run(str(cu), "--force")
    assert result.exit_code == 0, result.output
    assert list(load_spec(spec_path).kernels) == ["a", "b"]


def test_init_kernel_option_picks_one(tmp_path: Path) -> None:
    cu = tmp_path / "two.cu"
    cu.write_text(TWO)
    result = run(str(cu), "--kernel", "b")
    assert result.exit_code == 0, result.output
    assert "(1 kernel," in result.stdout
    assert list(load_spec(tmp_path / "two.cuopt.toml").kernels) == ["b"]


def test_init_unknown_kernel(tmp_path: Path) -> None:
    cu = tmp_path / "two.cu"
    cu.write_text(TWO)
    result = run(str(cu), "-k", "c")
    assert result.exit_code == 1
    assert result.stderr.strip() == f"cuopt: error: {cu}: no __global__ kernel named 'c' (found: a, b)"
    assert not (tmp_path / "two.cuopt.toml").exists()


def test_init_syntax_error_in_one_kernel_still_writes_the_other(tmp_path: Path) -> None:
    cu = tmp_path / "two.cu"
    cu.write_text(TWO.replace("z[i] += 1.0f;", "z[i] = ;"))
    result = run(str(cu))
    assert result.exit_code == 0, result.output
    assert f"{cu}:10:" in result.stderr and "kernel b skipped" in result.stderr
    assert list(load_spec(tmp_path / "two.cuopt.toml").kernels) == ["a"]


def test_init_file_without_kernels(tmp_path: Path) -> None:
    cu = tmp_path / "none.cu"
    cu.write_text("__device__ float f(float x) { return x; }\n")
    result = run(str(cu))
    assert result.exit_code == 1
    assert result.stderr.strip() == f"cuopt: error: {cu}: no __global__ kernels (found: none)"


def test_init_template_without_instantiation_describes_a_float_one_with_a_todo(tmp_path: Path) -> None:
    cu = tmp_path / "t.cu"
    cu.write_text("template <typename T>\n__global__ void k(T* x) { x[0] = 1; }\n"
                  "template <typename T, int VEC>\n__global__ void v(T* x) { x[0] = VEC; }\n")
    result = run(str(cu))
    assert result.exit_code == 0, result.output
    text = (tmp_path / "t.cuopt.toml").read_text()
    assert 'kernel = "k<float>"\n' in text
    assert ("# TODO: kernel: the file makes no instantiation of k that cuopt can read (one the launch deduces, or "
            "one made elsewhere): described as k<float>; set the one your program runs\n") in text
    assert ("# v (line 4) is left out: the file makes no instantiation that cuopt can read, and template parameter "
            'VEC has no default; add a table with kernel = "v<...>" to describe one\n') in text
    assert f"{cu}:4: kernel v skipped: " in result.stderr


def test_init_template_deduced_at_its_launch_takes_the_pointers_types(tmp_path: Path) -> None:
    """`k<<<g, b>>>(d_x, n)` with `double* d_x` instantiates k<double>; a functor's type cannot be read."""
    cu = tmp_path / "t.cu"
    cu.write_text("template <typename T, int U = 2>\n__global__ void k(T* x, int n)\n"
                  "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= U; }\n"
                  "void run(int n) { double* d_x; cudaMalloc(&d_x, n * sizeof(double));\n"
                  "  k<<<(n + 127) / 128, 128>>>(d_x, n); }\n")
    result = run(str(cu))
    assert result.exit_code == 0, result.output
    text = (tmp_path / "t.cuopt.toml").read_text()
    assert 'kernel = "k<double, 2>"\n' in text and "TODO: kernel" not in text
    assert tomllib.loads(text)["k_double_2"]["args"]["x"].startswith("inout float64[")


TEMPLATE_KERNEL = ("template <typename T, int BLOCK>\n"
                   "__global__ void scale(T* out, const T* in, int n)\n"
                   "{ int i = blockIdx.x * BLOCK + threadIdx.x; if (i < n) out[i] = 2 * in[i]; }\n")


def test_init_template_describes_the_first_instantiation(tmp_path: Path) -> None:
    cu = tmp_path / "t.cu"
    cu.write_text(TEMPLATE_KERNEL +
                  "void run(double* o, const double* x, int n) { scale<double, 128><<<(n + 127) / 128, 128>>>(o, x, n); }\n"
                  "template __global__ void scale<float, 512>(float*, const float*, int);\n")
    result = run(str(cu))
    assert result.exit_code == 0, result.output
    text = (tmp_path / "t.cuopt.toml").read_text()
    # the host launch of that instantiation gives the block
    assert ('[scale_double_128]\nkernel = "scale<double, 128>"\nblock = [128]  # from the launch at line 4\n'
            'grid = ["cdiv(n, block.x)"]\n' in text)
    assert ('[scale_double_128.args]\nout = "out float64[n]"  # TODO: no cudaMalloc of o found; the count is from '
            'the kernel body\n' in text)
    assert 'n = "n"  # TODO: the host passes n, set at run time; pick a size\n' in text


def test_init_template_block_from_a_template_argument(tmp_path: Path) -> None:
    cu = tmp_path / "t.cu"
    cu.write_text(TEMPLATE_KERNEL + "template __global__ void scale<float, 512>(float*, const float*, int);\n")
    result = run(str(cu))
    assert result.exit_code == 0, result.output
    text = (tmp_path / "t.cuopt.toml").read_text()
    assert ('[scale_float_512]\nkernel = "scale<float, 512>"\nblock = [512]\ngrid = ["cdiv(n, block.x)"]\n'
            in text)
    assert '[scale_float_512.args]\nout = "out float32[n]"\nin = "in float32[n]"\nn = "n"\n' in text
    assert text.count("TODO:") == 1  # the timing sizes


def test_init_missing_file(tmp_path: Path) -> None:
    result = run(str(tmp_path / "nope.cu"))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"cuopt: error: {tmp_path / 'nope.cu'}: cannot read")


def test_init_counts_the_todos_it_wrote(tmp_path: Path) -> None:
    """The summary counts the TODO notes in the spec, not the word in the file's header comment."""
    cu = tmp_path / "one.cu"
    cu.write_text(TWO)
    result = run(str(cu), "-k", "b")
    text = (tmp_path / "one.cuopt.toml").read_text()
    notes = sum(1 for line in text.splitlines() if "# TODO" in line and not line.startswith("# Spec for"))
    assert notes == 1
    assert "1 TODO to check" in result.stdout, result.stdout


POLYBENCH_HEADER = """#ifndef GEMM_CUH
# define GEMM_CUH
# if !defined(NI) && !defined(NJ) && !defined(NK)
#  define NI 512
#  define NJ 256
#  define NK 128
# endif
typedef float DATA_T;
# define DATA_TYPE float
#endif
"""
POLYBENCH = """#include <stdio.h>
#include <cuda.h>
#include "gemm.cuh"
#define BOUND_NI NI
#define BOUND_NJ NJ

__global__ void gemm_kernel(DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE *a, DATA_TYPE *b, DATA_TYPE *c)
{
	int col = blockIdx.x * blockDim.x + threadIdx.x;
	int row = blockIdx.y * blockDim.y + threadIdx.y;

	if ((row < BOUND_NI) && (col < BOUND_NJ))
	{
		int p;
		c[row * NJ + col] *= beta;
		for(p=0; p < NK; p++)
		{
			c[row * NJ + col] += alpha * a[row * NK + p] * b[p * NJ +col];
		}
	}
}
"""


def test_init_sees_macro_types_sizes_and_bounds_from_a_header_beside_the_file(tmp_path: Path) -> None:
    (tmp_path / "gemm.cuh").write_text(POLYBENCH_HEADER)
    cu = tmp_path / "gemm.cu"
    cu.write_text(POLYBENCH)
    result = run(str(cu))
    assert result.exit_code == 0, result.output
    text = (tmp_path / "gemm.cuopt.toml").read_text()
    assert "no spec dtype" not in text and "DATA_TYPE" not in text
    spec = load_spec(tmp_path / "gemm.cuopt.toml").kernels["gemm_kernel"]
    assert spec.sizes == {"NI": 512, "NJ": 256, "NK": 128}
    assert [str(g) for g in spec.launch.grid] == ["cdiv(NJ, block.x)", "cdiv(NI, block.y)"]
    args = {a.name: a for a in spec.args}
    assert (args["a"].role, args["a"].dtype, str(args["a"].count)) == ("in", "float32", "NI * NK")
    assert (args["b"].role, str(args["b"].count)) == ("in", "NJ * NK")
    assert (args["c"].role, str(args["c"].count)) == ("inout", "NI * NJ")
    assert isinstance(args["alpha"], Scalar) and args["alpha"].value == 1.0
    from cuopt.targets import read_source

    bind(spec, read_source(cu).kernel("gemm_kernel")).instances()


def _inferred(tmp_path: Path, name: str, source: str, files: dict[str, str], include_dirs=()):
    from cuopt.compile_settings import CompileSettings
    from cuopt.targets import read_source

    for rel, content in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(content)
    cu = tmp_path / "src" / name
    cu.parent.mkdir(parents=True, exist_ok=True)
    cu.write_text(source)
    [kernel] = read_source(cu, CompileSettings(include_dirs=tuple(tmp_path / d for d in include_dirs))).kernels
    return infer(kernel)


def test_init_one_dimensional_guard_by_early_exit_and_a_double_macro(tmp_path: Path) -> None:
    inf = _inferred(tmp_path, "scale.cu", """#include <cuda_runtime.h>
#if !defined(N)
#define N 4096
#endif
#define real_t double
#define LAST (N - 1)
__global__ void scale(real_t* __restrict__ y, const real_t* x, real_t s) {
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx > LAST) return;
    y[idx] = s * x[idx];
}
""", {})
    assert inf.grid == ["cdiv(N, block.x)"] and inf.sizes == {"N": 4096}
    assert inf.args == [("y", "out float64[N]", ""), ("x", "in float64[N]", ""),
                        ("s", 1.0, "TODO: value of this scalar")]


def test_init_index_macros_from_an_include_dir_and_fixed_sizes(tmp_path: Path) -> None:
    inf = _inferred(tmp_path, "blur.cu", """#include <util.h>
#include "../include/dims.h"
__global__ void blur(const DATA_TYPE* in, DATA_TYPE* out) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < W && y < H) {
        out[IDX(y, x)] = 0.5f * (in[IDX(y, x)] + in[IDX(y, x) + 1]);
    }
}
""", {"common/util.h": "#define IDX(r, c) ((r) * (W + 1) + (c))\n#define DATA_TYPE float\n",
      "include/dims.h": "#define W 1024\n#ifndef H\n#define H 768\n#endif\n"}, include_dirs=("common",))
    assert inf.grid == ["cdiv(W, block.x)", "cdiv(H, block.y)"]
    assert inf.sizes == {"H": 768, "W": 1024}
    assert inf.args[0] == ("in", "in float32[H*W + H]", "")
    assert inf.fixed == {} and inf.varied == ["W"]  # unguarded, but the kernel's guard bounds it: it varies
    assert inf.check_sizes and all(c["W"] != 1024 and c["H"] != 768 for c in inf.check_sizes)
    assert not any(" H " in n for n in inf.notes)


def test_init_holds_an_unguarded_size_no_guard_bounds_at_its_value(tmp_path: Path) -> None:
    inf = _inferred(tmp_path, "rowsum.cu", """#include "dims.h"
__global__ void rowsum(const float* a, float* s, int rows) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows) {
        float t = 0.0f;
        for (int k = 0; k < NK; k++) t += a[i * NK + k];
        s[i] = t;
    }
}
""", {"src/dims.h": "#define NK 64\n"})
    assert inf.fixed == {"NK": 64} and inf.check_sizes and all(c["NK"] == 64 for c in inf.check_sizes)
    assert any("size NK is `#define NK 64` without an #ifndef guard, and no guard of the kernel bounds it" in r
               for r in inf.remarks)


def test_a_buffer_stored_before_it_is_read_is_out_unless_the_store_is_conditional() -> None:
    kernel = """
__global__ void k(float* c, const float* a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        STORE c[i] = 0.0f;
        for (int j = 0; j < 4; ++j)
            c[i] += a[i * 4 + j];
    }
}
"""
    roles = {}
    for store in ("", "if (n > 3)"):
        [k] = load_source(kernel.replace("STORE", store)).kernels
        spec = parse(tomllib.loads(render([(k, infer(k))], "k.cu")), Path("k.cuopt.toml")).kernels["k"]
        roles[store] = spec.arg("c").role
    assert roles == {"": "out", "if (n > 3)": "inout"}


def test_a_grid_stride_loop_bounds_the_grid_and_the_arrays_it_walks() -> None:
    [k] = load_source("""
__global__ void total(const float* in, float* out, int n)
{
    float s = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        s += in[i];
    atomicAdd(out, s);
}
""").kernels
    got = infer(k)
    assert got.grid == ["cdiv(n, block.x)"]
    assert dict((name, spec) for name, spec, _ in got.args)["in"] == "in float32[n]"
    assert got.sizes["n"] == 1 << 24
    assert any("grid-stride loop" in note and "set the grid your code launches" in note for note in got.notes)


def test_a_loop_that_strides_by_the_block_only_is_not_grid_stride() -> None:
    [k] = load_source("""
__global__ void rows(const float* in, float* out, int n)
{
    float s = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x)
        s += in[i];
    out[blockIdx.x] = s;
}
""").kernels
    assert infer(k).grid == ["1"]


def test_a_struct_passed_by_value_is_a_todo_that_says_why() -> None:
    [k] = load_source("struct Args { float* y; int n; };\n"
                      "__global__ void k(Args p) { int i = threadIdx.x; if (i < p.n) p.y[i] = 1.0f; }\n").kernels
    [(name, _, note)] = infer(k).args
    assert name == "p" and "parameter type 'Args' is not supported" in note


def test_one_element_per_block_counts_the_grid() -> None:
    [k] = load_source("""
__global__ void partial_sums(const float* x, float* partial, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    if (threadIdx.x == 0) partial[blockIdx.x] = v;
}
""").kernels
    got = dict((name, (spec, note)) for name, spec, note in infer(k).args)
    assert got["partial"][0] == "out float32[cdiv(n, 256)]" and "one element per block" in got["partial"][1]


def test_counts_follow_pointers_into_a_parameter() -> None:
    [k] = load_source("""
__global__ void rows(const float* input, float* output, int batch, int dim)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch) return;
    const float* in = input + b * dim;
    float* out = output + b * dim;
    for (int d = 0; d < dim; d++) out[d] = 2.0f * in[d];
}
""").kernels
    got = dict((name, spec) for name, spec, _ in infer(k).args)
    assert got["input"] == "in float32[batch*dim]" and got["output"] == "out float32[batch*dim]"


def test_a_batch_index_on_blockIdx_z_makes_a_3d_launch_with_one_thread_deep_blocks() -> None:
    [k] = load_source("""
__global__ void vblur(const float* img, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int b = blockIdx.z;
    if (x < w && y > 0 && y < h - 1)
        out[(b * h + y) * w + x] = img[(b * h + y - 1) * w + x] + img[(b * h + y + 1) * w + x];
}
""").kernels
    got = infer(k)
    assert got.block == [16, 16, 1]
    assert got.grid == ["cdiv(w, block.x)", "cdiv(h - 1, block.y)", "1"]
    assert any(note.startswith("grid[2]: no `index < bound` guard found along z") for note in got.notes)


def test_threads_along_z_get_a_3d_block() -> None:
    [k] = load_source("""
__global__ void lap3(const float* u, float* v, int nx, int ny, int nz)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i < nx && j < ny && k > 0 && k < nz - 1)
        v[(k * ny + j) * nx + i] = u[((k - 1) * ny + j) * nx + i] + u[((k + 1) * ny + j) * nx + i];
}
""").kernels
    got = infer(k)
    assert got.block == [8, 8, 4] and len(got.grid) == 3


def test_accessor_macros_are_read_as_the_elements_they_name() -> None:
    source = b"""
#define A(i, j) a[(i) * lda + (j)]
#define C(i, j) c[(i) * ldc + (j)]
__global__ void scale(int m, int n, const float* a, int lda, float* c, int ldc)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < m && j < n) C(i, j) = 2.0f * A(i, j);
}
"""
    [k] = load_source(source, macros_of(source, Path("k.cu"))).kernels
    got = dict((name, spec) for name, spec, _ in infer(k).args)
    assert got["a"] == "in float32[lda*m + n - lda]" and got["c"] == "out float32[ldc*m + n - ldc]"


@pytest.mark.parametrize("helper, declared", [
    ("", "    auto at = [nx](int x, int y) { return y * nx + x; };\n"),
    ("__device__ int at(int x, int y, int nx) { return y * nx + x; }\n", ""),
])
def test_index_helpers_are_read_as_the_indices_they_return(helper: str, declared: str) -> None:
    call = "at(x, y)" if declared else "at(x, y, nx)"
    source = (helper + "__global__ void copy2d(const float* u, float* v, int nx, int ny)\n{\n"
              "    int x = blockIdx.x * blockDim.x + threadIdx.x;\n    int y = blockIdx.y * blockDim.y + threadIdx.y;\n"
              f"{declared}    if (x < nx && y < ny) v[{call}] = u[{call}];\n}}\n").encode()
    [k] = load_source(source, macros_of(source, Path("k.cu"))).kernels
    got = dict((name, spec) for name, spec, _ in infer(k).args)
    assert got["u"] == "in float32[nx*ny]" and got["v"] == "out float32[nx*ny]"


def test_locals_declared_first_are_read_from_their_sole_assignment() -> None:
    # the older C style: `int i, j; ... i = ...;` gives the same guard, grid and counts as `int i = ...;`
    source = b"""
#define CELL(nx, x, y) ((nx) * (y) + (x))
__global__ void laplace(int ni, int nj, float *t_old, float *t_new)
{
    int i, j;
    int mid, west;
    i = blockIdx.x * blockDim.x + threadIdx.x;
    j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i > 0 && i < ni - 1 && j > 0 && j < nj - 1) {
        mid = CELL(ni, i, j);
        west = CELL(ni, i - 1, j);
        t_new[mid] = 0.5f * (t_old[west] + t_old[mid]);
    }
}
"""
    [k] = load_source(source, macros_of(source, Path("k.cu"))).kernels
    got = infer(k)
    assert got.grid == ["cdiv(ni - 1, block.x)", "cdiv(nj - 1, block.y)"]
    args = dict((name, spec) for name, spec, _ in got.args)
    assert args["t_old"] == "in float32[ni*nj - ni]" and args["t_new"] == "out float32[ni*nj - ni]"


def test_built_in_aliases_are_read_as_the_built_ins() -> None:
    # Rodinia's style: `int bx = blockIdx.x; int tx = threadIdx.x; int idx = bx * BLOCK_SIZE + tx;`
    source = b"""
#define BLOCK_SIZE 256
__global__ void scale(float *J, float *C, int n, float q)
{
    int bx = blockIdx.x;
    int tx = threadIdx.x;
    int idx = bx * BLOCK_SIZE + tx;
    if (idx >= n) return;
    C[idx] = q * J[idx];
}
"""
    [k] = load_source(source, macros_of(source, Path("k.cu"))).kernels
    got = infer(k)
    assert got.grid == ["cdiv(n, block.x)"] and got.block == [256]
    args = dict((name, spec) for name, spec, _ in got.args)
    assert args["J"] == "in float32[n]" and args["C"] == "out float32[n]"


# -- counts in scalars, row pointers, partial and clamped reaches, index buffers, unsupported kernels ----
def kernel_of(source: str):
    data = source.encode()
    [k] = load_source(data, macros_of(data, Path("k.cu"))).kernels
    return k


def inferred_args(source: str) -> dict[str, tuple[str | float, str]]:
    return {name: (value, note) for name, value, note in infer(kernel_of(source)).args}


def checked_spec(source: str) -> KernelSpec:
    """The spec init writes for the one kernel of `source`, parsed, bound and evaluated at every size."""
    k = kernel_of(source)
    spec = parse(tomllib.loads(render([(k, infer(k))], "k.cu")), Path("k.cuopt.toml")).kernels[k.name]
    bind(spec, k).instances()
    return spec


CMUL = """\
typedef float2 Complex;
__global__ void cmul(const float2 *a, const Complex *b, float2 *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float2 x = a[i], y = b[i];
        c[i] = make_float2(x.x * y.x - x.y * y.y, x.x * y.y + x.y * y.x);
    }
}
"""


def test_vector_pointers_without_a_malloc_count_scalar_elements() -> None:
    """A float2 is two float32 elements of the spec's buffer, through a typedef too."""
    assert inferred_args(CMUL) == {"a": ("in float32[2*n]", ""), "b": ("in float32[2*n]", ""),
                                   "c": ("out float32[2*n]", ""), "n": ("n", "")}
    checked_spec(CMUL)
    partial = inferred_args("__global__ void k(const float4* x, float4* partial, int n)\n"
                            "{ int i = blockIdx.x * blockDim.x + threadIdx.x; float4 v = x[i < n ? i : 0];\n"
                            "  if (threadIdx.x == 0) partial[blockIdx.x] = v; }\n")["partial"]
    assert partial[0] == "out float32[4*cdiv(n, 256)]" and "one element per block" in partial[1]


ROWDOT = """\
__global__ void rowdot(const float *u, const float *v, float *prod, int batch, int dim)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < batch) {
        const float *ub = &u[b * dim];
        const float *vb = &(v[b * dim]);
        float *pb = &prod[b * dim];
        for (int k = 0; k < dim; ++k) pb[k] = ub[k] * vb[k];
    }
}
"""


def test_row_pointers_taken_with_address_of_count_the_whole_row() -> None:
    """`&u[b * dim]` points into u as `u + b * dim` does; taking the address reads and writes nothing."""
    args = inferred_args(ROWDOT)
    assert args["u"] == args["v"] == ("in float32[batch*dim]", "")
    assert args["prod"] == ("out float32[batch*dim]", "")


def test_a_row_pointer_moved_later_leaves_the_count_unknown() -> None:
    args = inferred_args(ROWDOT.replace("for (int k", "ub += 1;\n        for (int k"))
    assert args["u"][0] == "in float32[1024]" and "not inferred" in args["u"][1]


def test_affine_accesses_give_the_count_beside_an_unknown_one() -> None:
    args = inferred_args("""\
__global__ void k(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + x[(i * 7) ^ n];
}
""")
    assert args["x"] == ("in float32[n]", "TODO: the count covers the affine accesses; the access at line 4 "
                                          "(data-dependent or non-affine index) may reach further")


PERMUTE = """__global__ void permute_bhsd(const float *x, float *y, int B, int H, int S, int D)
{
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long total = (long long)B * H * S * D;
    if (idx >= total) return;
    int d = idx % D;
    int s = (idx / D) % S;
    int h = (idx / ((long long)D * S)) % H;
    int b = idx / ((long long)D * S * H);
    y[(((long long)b * S + s) * H + h) * D + d] = x[idx];
}
"""


@pytest.mark.parametrize("index,count", [
    ("(((long long)b * S + s) * H + h) * D + d", "B*D*H*S"),  # the indices split with / and %, put together
    ("idx % D", "D"),
    ("idx / D", "B*H*S"),  # idx < B*H*S*D: idx / D < B*H*S
    ("idx / 3", None),  # 3 divides neither B*H*S*D nor B*H*S*D - 1 as a polynomial
    ("(idx - 5) % D", None),  # a negative left side leaves a negative remainder
])
def test_quotients_and_remainders_of_the_thread_index_are_counted(index: str, count: str | None) -> None:
    args = inferred_args(PERMUTE.replace("(((long long)b * S + s) * H + h) * D + d", index))
    assert args["x"] == ("in float32[B*D*H*S]", "")
    if count is None:
        assert "not inferred" in args["y"][1]
    else:
        assert args["y"] == (f"out float32[{count}]", "")


TILE_ROWS = """#define TILE_DIM 32
#define BLOCK_ROWS 8
__global__ void transpose_rows_naive(float *dst, const float *src, int width, int height)
{
    int col = blockIdx.x * TILE_DIM + threadIdx.x;
    int row = blockIdx.y * TILE_DIM + threadIdx.y;
    int from = row * width + col;
    int to = col * height + row;
    for (int r = 0; r < TILE_DIM; r += BLOCK_ROWS)
        dst[to + r] = src[from + r * width];
}

void run(float *out, const float *in, int w, int h)
{
    dim3 grid(GRID), threads(TILE_DIM, BLOCK_ROWS);
    transpose_rows_naive<<<grid, threads>>>(out, in, w, h);
}
"""


@pytest.mark.parametrize("grid,counts", [
    ("w / TILE_DIM, h / TILE_DIM", ("height*width", "height*width")),  # the SDK's: 32x32 tiles, 8 rows a step
    ("(w + TILE_DIM - 1) / TILE_DIM, (h + TILE_DIM - 1) / TILE_DIM",  # up to 31 past each edge, unguarded
     ("height*width + 31*height + 31", "height*width + 31*width + 31")),
    ("w / 16, h / 16", ("2*height*width + height", "2*height*width + width")),  # blocks 16 apart, 32 wide
    ("w / 24, h / 24", None),  # tiles 32 wide, 24 apart: no polynomial says where the last one ends
])
def test_an_unguarded_tile_kernel_is_counted_over_its_launch(grid: str, counts: tuple[str, str] | None) -> None:
    """Without a guard, the host's launch bounds the indices: each thread index within the block,
    each block index within the grid, the tile width the kernel steps by where it is not blockDim."""
    source = TILE_ROWS.replace("GRID", grid).encode()
    [k] = [k for k in read_source(Path("t.cu"), data=source).kernels]
    args = {name: (value, note) for name, value, note in infer_in_file(source, k).args}
    for i, name in enumerate(("dst", "src")):
        if counts is None:
            assert "not inferred" in args[name][1]
        else:
            assert args[name][0].endswith(f"float32[{counts[i]}]"), args[name]


def test_a_loop_bounded_by_the_thread_index_and_clamped_indices_are_counted() -> None:
    scan = inferred_args("""\
__global__ void scan_naive(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = 0.f;
        for (int j = 0; j <= i; ++j) s += in[j];
        out[i] = s;
    }
}
""")
    assert scan["in"] == ("in float32[n]", "")
    source = """\
__global__ void smooth(const float *src, float *dst, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        int yu = max(y - 1, 0);
        dst[y * w + x] = src[y * w + std::max(x - 1, 0)] + src[y * w + min(x + 1, w - 1)]
                         + src[yu * w + x] + src[::min(y + 1, h - 1) * w + x] + src[min(max(x, 1), w - 1)];
    }
}
"""
    assert inferred_args(source)["src"] == ("in float32[h*w]", "")
    checked_spec(source)


def test_counts_never_fall_short_of_what_the_kernel_reaches() -> None:
    """A loop walked backwards reaches its far end at its start; two unrelated reaches give a max."""
    source = """\
__global__ void k(const float *x, const float *a, float *y, int n, int m)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < m) {
        for (int c = 0; c < n; ++c) y[r * n + c] = x[r * n + n - 1 - c] + a[c];
        for (int c = n - 1; c >= 0; --c) y[r * n + c] += a[m - 1 - r];
    }
}
"""
    args = inferred_args(source)
    assert args["x"] == ("in float32[m*n]", "")
    assert args["a"] == ("in float32[max(n, m)]", "")
    spec = checked_spec(source)
    assert E.evaluate(spec.arg("a").count, {"n": 3, "m": 5}) == 5
    pitched = inferred_args(source.replace("r * n + n - 1 - c", "r * (n - 1) + c").replace("c < n;", "c < n - 1;"))
    assert pitched["x"] == ("in float32[m*n - m]", "")  # grows with r: its coefficient n - 1 is >= 0


CROSS_ENTROPY = """\
__global__ void xent(const float *logits, const long long *labels, float *losses, int batch, int vocab)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch) return;
    long long t = labels[b];
    float mx = -1e30f;
    for (int v = 0; v < vocab; ++v) mx = fmaxf(mx, logits[(size_t)b * vocab + v]);
    losses[b] = mx - logits[b * vocab + t];
}
"""


def test_labels_that_index_a_row_are_drawn_within_the_row() -> None:
    args = inferred_args(CROSS_ENTROPY)
    assert args["labels"] == ("in int64[batch] randint(0, vocab)", "")
    assert args["logits"] == ("in float32[batch*vocab]", "")  # the labels keep the data-dependent access in it
    spec = checked_spec(CROSS_ENTROPY)
    assert spec.sizes["batch"] * spec.sizes["vocab"] * 4 <= 512 << 20  # the known count keeps the sizes small



LLMC_STYLE = """\
__global__ void xent_bt(float* losses, const float* probs, const int* labels, int B, int T, int V)
{
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < B * T) {
        int seq = n / T;
        int pos = n % T;
        const float* p = probs + seq * T * V + pos * V;
        int label = labels[seq * T + pos];
        losses[seq * T + pos] = -logf(p[label]);
    }
}
"""

EMBED = """\
__global__ void embed(float* out, const int* tokens, const float* table, int N, int C)
{
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < N) {
        int id = tokens[n];
        const float* row = table + id * C;
        for (int c = 0; c < C; c++) out[n * C + c] = row[c];
    }
}
"""


def test_indices_into_a_row_pointer_are_drawn_within_the_buffer() -> None:
    """Training code's spelling: the row split with / and % and put together again in a local pointer
    (`probs + seq * T * V + pos * V`), and a row chosen by a value read from another buffer
    (`table + id * C`)."""
    labels = inferred_args(LLMC_STYLE)["labels"]  # without host code, probs' count is unknown
    assert labels == ("in int32[B*T]", "TODO: its values index probs at line 9: give it an init that keeps those "
                                       "indices in bounds (the default, randint(-100, 100), does not)")
    assert inferred_args(EMBED)["tokens"][1].startswith("TODO: its values index table at line 7: give it an init")

SPMV = """\
__global__ void spmv(int num_rows, const int *row_ptr, const int *col_idx, const float *vals,
                     const float *x, float *y)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < num_rows) {
        float dot = 0.0f;
        int row_end = row_ptr[row + 1];
        for (int jj = row_ptr[row]; jj < row_end; jj++)
            dot += vals[jj] * x[__ldg(&col_idx[jj])];
        y[row] = dot;
    }
}
"""


def test_csr_row_pointers_start_empty_and_column_indices_stay_within_x() -> None:
    args = inferred_args(SPMV)
    value, note = args["row_ptr"]
    assert value == "in int32[num_rows + 1] zeros"
    assert note.startswith("TODO: its values bound the loop at line 8 over col_idx, vals: they must stay within")
    assert "(sorted, as CSR row pointers)" in note
    assert "no spec init generates" in note
    value, note = args["col_idx"]
    assert value == "in int32[1024] randint(0, 1024)"
    assert "its values index x at line 9, whose count is a guess" in note
    checked_spec(SPMV)


def test_small_index_types_keep_their_range_and_unknown_ranges_are_todos() -> None:
    assert 'data = "in uint8[n] randint(0, 256)"\n' in rendered("histogram")
    args = inferred_args("""\
__global__ void gather(const int *tokens, const float *table, float *out, int D)
{
    int d = blockIdx.x * blockDim.x + threadIdx.x;
    int t = blockIdx.y;
    if (d < D) out[t * D + d] = table[tokens[t] * D + d];
}
""")
    assert args["tokens"][1].endswith("its values index table at line 5: give it an init that keeps those indices "
                                      "in bounds (the default, randint(-100, 100), does not)")


FUNCTOR = """\
struct Sigmoid { __device__ float operator()(float x) const { return 1.0f / (1.0f + expf(-x)); } };

template <typename T, typename Op>
__global__ void unary_map(const T *in, T *out, int n, Op op)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = op(in[i]);
}

__global__ void scale(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}

void run(const float *x, float *y, int n)
{
    unary_map<float, Sigmoid><<<(n + 255) / 256, 256>>>(x, y, n, Sigmoid());
    scale<<<(n + 255) / 256, 256>>>(x, y, n);
}
"""


def test_a_kernel_no_spec_can_describe_is_left_out_with_a_comment() -> None:
    source = load_source(FUNCTOR)
    kernels = [source.kernel("unary_map<float, Sigmoid>"), source.kernel("scale")]
    text = render([(k, infer(k)) for k in kernels], "f.cu")
    assert ("# unary_map<float, Sigmoid> (line 4) is left out: parameter op has type 'Op (Sigmoid)', which a spec "
            "cannot pass (it passes numbers and pointers to them); cuopt cannot run it\n") in text
    assert list(parse(tomllib.loads(text), Path("f.cuopt.toml")).kernels) == ["scale"]


def test_a_block_size_written_as_a_macro_gives_the_block_and_a_grid_per_block() -> None:
    source = b"""#define TILE 16
__global__ void transpose(const float* in, float* out, int rows, int cols)
{
    int c = blockIdx.x * TILE + threadIdx.x;
    int r = blockIdx.y * TILE + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}
"""
    [k] = load_source(source, macros_of(source, Path("k.cu"))).kernels
    got = infer(k)
    assert got.block == [16, 16] and got.grid == ["cdiv(cols, block.x)", "cdiv(rows, block.y)"]


def test_a_constant_array_the_host_fills_is_noted() -> None:
    source = b"""__constant__ float taps[9];
__constant__ float fixed[2] = {0.5f, 0.5f};
__global__ void fir(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i + 9 <= n) {
        float s = fixed[0];
        for (int j = 0; j < 9; ++j) s += taps[j] * x[i + j];
        y[i] = s;
    }
}
"""
    [k] = load_source(source).kernels
    remarks = infer(k).remarks
    assert any("__constant__ taps" in r and "cannot fill it" in r for r in remarks)
    assert not any("fixed" in r for r in remarks)  # it has its values in the file


def test_values_that_reach_an_index_cuopt_cannot_follow_get_a_todo() -> None:
    [k] = load_source(b"""
__global__ void enc(float* out, const int* inp, const float* wte, int B, int T, int C)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < B * T * C) {
        int bt = idx / C;
        int c = idx - bt * C;
        int ix = inp[bt];
        out[idx] = wte[ix * C + c];
    }
}
""").kernels
    got = {name: note for name, _, note in infer(k).args}
    assert "its values index wte" in got["inp"]


def test_a_constant_a_parameter_hides_stays_the_parameter() -> None:
    """`constexpr int n = 4;` at file scope and a kernel parameter `n`: C++ scopes the constant's name
    (a macro would replace it everywhere), so `n` is the parameter's size and TILE a fixed constant."""
    source = b"""constexpr int n = 4;
constexpr int TILE = 16;
__global__ void k(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = 0.f;
        for (int j = 0; j < TILE; ++j) s += x[i * TILE + j];
        y[i] = s;
    }
}
"""
    [k] = read_source(Path("k.cu"), data=source).kernels
    got = infer(k)
    assert got.grid == ["cdiv(n, block.x)"] and got.sizes["n"] > 4 and got.sizes["TILE"] == 16
    assert {name: value for name, value, _ in got.args}["x"] == "in float32[TILE*n]"
