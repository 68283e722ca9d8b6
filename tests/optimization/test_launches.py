"""Host launch sites: finding `kernel<<<...>>>(...)`, retargeting them for a new launch when that is
safe (and saying why not otherwise), and spec expressions as C."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from cuopt.source.kernels import load as load_source
from cuopt.source.launches import launch_sites, retarget, to_c
from cuopt.source.preprocess import macros_of
from cuopt.spec import expr as E
from cuopt.spec.model import KernelSpec, Launch, load as load_spec

from tests.conftest import SAMPLES

SAXPY = (SAMPLES / "saxpy.cu").read_text()
STENCIL = (SAMPLES / "stencil2d.cu").read_text()


def spec_of(name: str) -> KernelSpec:
    return load_spec(SAMPLES / f"{name}.cuopt.toml").kernels[name]


def launch(block: tuple[int, ...], *grid: str, shared: str = "0") -> Launch:
    return Launch(block, tuple(E.parse(g) for g in grid), E.parse(shared))


def host(body: str, params: str = "int n, float a, const float* x, float* y, cudaStream_t stream") -> str:
    return f"\nvoid run({params})\n{{\n{body}\n}}\n"


def retarget_saxpy(body: str, new: Launch) -> tuple[str, int, list[str], str]:
    source = SAXPY + host(body)
    spec = spec_of("saxpy")
    kernel = load_source(source).kernel("saxpy")
    assert kernel is not None
    out, count, problems = retarget(source.encode(), kernel, spec, spec.launch, new)
    return out.decode(), count, problems, source


def line_of(source: str, needle: str) -> int:
    return next(i for i, ln in enumerate(source.splitlines(), 1) if needle in ln)


# -- finding launch sites -----------------------------------------------------------------------------------

def test_launch_sites_finds_the_kernels_launches_only() -> None:
    source = SAXPY + host("""\
    saxpy<<<(n + 255) / 256, 256>>>(n, a, x, y);
    other<<<1, 32>>>(n);
    saxpy<<<dim3(grid_x, 2), dim3(16, 16), 0, stream>>>(n, a, x, y);
    float z = helper(n);
    ns::saxpy<<<g, b>>>(n, a, x, y);""")
    sites = launch_sites(source.encode(), "saxpy")
    assert [s.line for s in sites] == [line_of(source, "saxpy<<<(n"), line_of(source, "dim3(grid_x"),
                                       line_of(source, "ns::saxpy")]
    assert [[c.text.decode() for c in s.config_args] for s in sites] == [
        ["(n + 255) / 256", "256"], ["dim3(grid_x, 2)", "dim3(16, 16)", "0", "stream"], ["g", "b"]]
    assert all([a.text.decode() for a in s.args] == ["n", "a", "x", "y"] for s in sites)
    assert launch_sites(source.encode(), "other")[0].line == line_of(source, "other<<<")
    assert launch_sites(source.encode(), "helper") == []
    assert launch_sites(SAXPY.encode(), "saxpy") == [], "the kernel definition is not a launch"


# -- retargeting ----------------------------------------------------------------------------------------------

def test_retarget_rewrites_a_site_for_a_new_block() -> None:
    out, count, problems, source = retarget_saxpy("    saxpy<<<(n + 255) / 256, 256>>>(n, a, x, y);",
                                                  launch((128,), "cdiv(n, block.x)"))
    assert (count, problems) == (1, [])
    assert out == source.replace("saxpy<<<(n + 255) / 256, 256>>>(n, a, x, y);",
                                 "saxpy<<<(n + 127) / 128, 128>>>(n, a, x, y);")


def test_retarget_follows_a_grid_that_covers_more_per_block() -> None:
    """The example of docs/optimize.md: vectorizing by 4 divides the grid by 4."""
    out, count, problems, _ = retarget_saxpy("    saxpy<<<(n + 255) / 256, 256>>>(n, a, x, y);",
                                             launch((256,), "cdiv(n, block.x * 4)"))
    assert (count, problems) == (1, [])
    assert "    saxpy<<<(n + 1023) / 1024, 256>>>(n, a, x, y);" in out


def test_retarget_keeps_shared_and_stream_and_uses_the_host_arguments() -> None:
    out, count, problems, source = retarget_saxpy(
        "    saxpy<<<dim3((count + 255) / 256), dim3(256), 0, stream>>>(count * 2, a, x, y);",
        launch((512,), "cdiv(n, block.x)"))
    assert (count, problems) == (1, [])
    assert "    saxpy<<<((count * 2) + 511) / 512, 512, 0, stream>>>(count * 2, a, x, y);" in out
    assert out.replace("<<<((count * 2) + 511) / 512, 512, 0, stream>>>",
                       "<<<dim3((count + 255) / 256), dim3(256), 0, stream>>>") == source


def test_retarget_a_2d_launch_with_dim3() -> None:
    body = ("    stencil2d<<<dim3((width + 15) / 16, (height + 15) / 16), dim3(16, 16), 0, stream>>>"
            "(in, out, width, height);")
    source = STENCIL + host(body, "const float* in, float* out, int width, int height, cudaStream_t stream")
    spec = spec_of("stencil2d")
    kernel = load_source(source).kernel("stencil2d")
    assert kernel is not None
    new = launch((32, 8), "cdiv(w, block.x)", "cdiv(h, block.y)")
    out, count, problems = retarget(source.encode(), kernel, spec, spec.launch, new)
    assert (count, problems) == (1, [])
    assert out.decode() == source.replace(
        "<<<dim3((width + 15) / 16, (height + 15) / 16), dim3(16, 16), 0, stream>>>",
        "<<<dim3((width + 31) / 32, (height + 7) / 8, 1), dim3(32, 8, 1), 0, stream>>>")


def test_retarget_rewrites_every_safe_site_and_reports_the_others() -> None:
    body = """\
    saxpy<<<(n + 255) / 256, 256>>>(n, a, x, y);
    saxpy<<<(n + 255) / 256, threads>>>(n, a, x, y);
    saxpy<<<(n + 255) / 256, 256, 0, stream>>>(n, a, x, y);"""
    out, count, problems, source = retarget_saxpy(body, launch((128,), "cdiv(n, block.x)"))
    assert count == 2
    assert problems == [f"line {line_of(source, 'threads>>>')}: its block (threads) is not the constant block 256 "
                        "of the spec"]
    assert "saxpy<<<(n + 255) / 256, threads>>>(n, a, x, y);" in out
    assert "saxpy<<<(n + 127) / 128, 128>>>(n, a, x, y);" in out
    assert "saxpy<<<(n + 127) / 128, 128, 0, stream>>>(n, a, x, y);" in out


@pytest.mark.parametrize("setup, block", [
    ("", "threads"),  # never declared
    ("#define BLOCK 256\n", "BLOCK"),  # a macro the preprocessor's table (none given here) does not hold
    ("", "128"),
    ("", "dim3(16, 16)"),
    ("    int threads = n > 4096 ? 512 : 256;\n", "threads"),  # chosen at run time
    ("    int threads = 256;\n    if (n > 4096) threads = 512;\n", "threads"),  # assigned twice
    ("    dim3 t(256);\n    if (n > 4096) t.x = 512;\n    else t.x = 256;\n", "t"),  # a field set on two paths
])
def test_retarget_refuses_a_block_that_is_not_the_constant_old_block(setup: str, block: str) -> None:
    body = f"{setup}    saxpy<<<(n + 255) / 256, {block}>>>(n, a, x, y);"
    out, count, problems, source = retarget_saxpy(body, launch((128,), "cdiv(n, block.x)"))
    assert (out, count) == (source, 0)
    assert problems == [f"line {line_of(source, '<<<')}: its block ({block}) is not the constant block 256 of the spec"]


@pytest.mark.parametrize("setup, config", [
    ("", "(n + 255) / 256, 256 * 1"),
    ("    const int threads = 256;\n", "(n + threads - 1) / threads, threads"),
    ("    dim3 block(256);\n    dim3 grid((n + 255) / 256);\n", "grid, block"),
    ("    dim3 block;\n    block.x = 256;\n", "(n + 255) / 256, block"),
    ("    dim3 block = dim3(256, 1, 1);\n", "(n + 255) / 256, block"),
])
def test_retarget_follows_a_block_held_in_a_variable(setup: str, config: str) -> None:
    """The site gets the new block and grid written out; the variables stay for whatever else uses them."""
    body = f"{setup}    saxpy<<<{config}>>>(n, a, x, y);"
    out, count, problems, source = retarget_saxpy(body, launch((128,), "cdiv(n, block.x)"))
    assert (count, problems) == (1, [])
    assert out == source.replace(f"saxpy<<<{config}>>>", "saxpy<<<(n + 127) / 128, 128>>>")


def test_retarget_reads_the_block_and_sizes_from_macros(tmp_path: Path) -> None:
    """`#define BLOCK 16` and a size the kernel reads as a macro (`W`), as older programs write them."""
    source = """\
#define W 1024
#define H 512
#define BLOCK 16
__global__ void blur(const float* in, float* out)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < W && y < H) out[y * W + x] = 0.5f * in[y * W + x];
}

int main()
{
    float *in, *out;
    dim3 threads(BLOCK, BLOCK);
    dim3 blocks((W + BLOCK - 1) / BLOCK, (H + BLOCK - 1) / BLOCK);
    blur<<<blocks, threads>>>(in, out);
    return 0;
}
"""
    path = tmp_path / "blur.cu"
    path.write_text(source)
    spec_path = tmp_path / "blur.cuopt.toml"
    spec_path.write_text('[blur]\nblock = [16, 16]\ngrid = ["cdiv(W, block.x)", "cdiv(H, block.y)"]\n'
                         'sizes = { W = 1024, H = 512 }\n\n[blur.args]\nin = "in float32[W*H]"\n'
                         'out = "out float32[W*H]"\n')
    spec = load_spec(spec_path).kernels["blur"]
    kernel = load_source(source).kernel("blur")
    assert kernel is not None
    new = launch((32, 8), "cdiv(W, block.x * 4)", "cdiv(H, block.y)")
    out, count, problems = retarget(source.encode(), kernel, spec, spec.launch, new, macros_of(source.encode(), path))
    assert (count, problems) == (1, [])
    assert out.decode() == source.replace("blur<<<blocks, threads>>>",
                                          "blur<<<dim3((W + 127) / 128, (H + 7) / 8, 1), dim3(32, 8, 1)>>>")
    assert retarget(source.encode(), kernel, spec, spec.launch, new)[1] == 0, "without the macros: left alone"


def test_retarget_accepts_the_old_block_written_as_dim3() -> None:
    out, count, problems, _ = retarget_saxpy("    saxpy<<<(n + 255) / 256, dim3(256, 1)>>>(n, a, x, y);",
                                             launch((128,), "cdiv(n, block.x)"))
    assert (count, problems) == (1, [])
    assert "saxpy<<<(n + 127) / 128, 128>>>(n, a, x, y);" in out


def test_retarget_refuses_when_the_argument_count_differs() -> None:
    out, count, problems, source = retarget_saxpy("    saxpy<<<(n + 255) / 256, 256>>>(n, a, x);",
                                                  launch((128,), "cdiv(n, block.x)"))
    assert (out, count) == (source, 0)
    assert problems == [f"line {line_of(source, '<<<')}: argument count differs from the kernel's parameters"]


def test_retarget_refuses_a_new_dynamic_shared_size() -> None:
    out, count, problems, source = retarget_saxpy("    saxpy<<<(n + 255) / 256, 256>>>(n, a, x, y);",
                                                  launch((256,), "cdiv(n, block.x)", shared="block.x * 4"))
    assert (out, count) == (source, 0)
    assert problems == [f"line {line_of(source, '<<<')}: the dynamic shared memory size changes"]


def test_retarget_refuses_a_grid_size_that_is_not_a_kernel_argument(tmp_path: Path) -> None:
    source = """\
__global__ void fill(float* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = 1.0f;
}

void run(float* out, int count)
{
    fill<<<count / 256, 256>>>(out);
}
"""
    spec_path = tmp_path / "fill.cuopt.toml"
    spec_path.write_text('[fill]\nblock = [256]\ngrid = ["n // block.x"]\nsizes = { n = 4096 }\n\n'
                         '[fill.args]\nout = "out float32[n]"\n')
    spec = load_spec(spec_path).kernels["fill"]
    kernel = load_source(source).kernel("fill")
    assert kernel is not None
    out, count, problems = retarget(source.encode(), kernel, spec, spec.launch, launch((128,), "n // block.x"))
    assert (out.decode(), count) == (source, 0)
    assert problems == ["line 9: size n of the new grid is not a kernel argument"]


def test_retarget_without_launch_sites_changes_nothing() -> None:
    spec = spec_of("saxpy")
    kernel = load_source(SAXPY).kernel("saxpy")
    assert kernel is not None
    assert retarget(SAXPY.encode(), kernel, spec, spec.launch, launch((128,), "cdiv(n, block.x)")) == (
        SAXPY.encode(), 0, [])


# -- spec expressions as C -------------------------------------------------------------------------------------

NAMES = {"n": "n", "m": "m", "k": "k", "block.x": "128", "block.y": "8", "block.z": "1"}


@pytest.mark.parametrize("expr, c", [
    ("42", "42"),
    ("n", "n"),
    ("2 * 3 + n", "(6 + n)"),
    ("block.x * 4", "512"),
    ("block.x * block.y", "1024"),
    ("cdiv(n, block.x)", "((n + 127) / 128)"),
    ("cdiv(n, block.x * 4)", "((n + 511) / 512)"),
    ("cdiv(n, 1)", "((n) / 1)"),
    ("cdiv(n, m)", "((n + m - 1) / m)"),
    ("cdiv(n - k + 1, block.x)", "((((n - k) + 1) + 127) / 128)"),
    ("n // block.x", "(n / 128)"),
    ("min(n, 1024)", "(n < 1024 ? n : 1024)"),
    ("max(n // block.x, 1)", "((n / 128) > 1 ? (n / 128) : 1)"),
    ("min(n, m, k)", "((n < m ? n : m) < k ? (n < m ? n : m) : k)"),
    ("-n", "(-n)"),
])
def test_to_c(expr: str, c: str) -> None:
    assert to_c(E.parse(expr), NAMES) == c


def c_value(c: str, env: dict[str, int]) -> int:
    """Evaluate C integer arithmetic over non-negative values (no ?:) with Python."""
    assert "?" not in c
    py = re.sub(r"(?<![/])/(?![/])", "//", c)
    return int(eval(py, {}, dict(env)))  # noqa: S307 - our own test expressions


SEMANTIC = ["cdiv(n, block.x)", "cdiv(n, block.x * 4)", "cdiv(n - k + 1, block.x)", "n // block.x + 1",
            "cdiv(n, m) * 2", "cdiv(cdiv(n, 4), block.x)", "n - cdiv(m, block.x)"]


@pytest.mark.parametrize("expr", SEMANTIC)
def test_to_c_computes_what_the_spec_computes(expr: str) -> None:
    parsed = E.parse(expr)
    for n, m, k in [(1, 1, 1), (97, 5, 3), (1000003, 129, 7), (128, 128, 2), (4096, 300, 9)]:
        env = {"n": n, "m": m, "k": k}
        spec_env = {**env, "block.x": 128, "block.y": 8, "block.z": 1}
        assert c_value(to_c(parsed, NAMES), env) == E.evaluate(parsed, spec_env), (expr, env, to_c(parsed, NAMES))


@pytest.mark.parametrize("expr", ["2 * cdiv(n, block.x)", "cdiv(n, cdiv(m, 4))", "n // cdiv(m, 4)",
                                  "block.y * cdiv(n, m)"])
def test_to_c_keeps_a_cdiv_a_single_operand(expr: str) -> None:
    """`cdiv(a, b)` becomes `(a + b - 1) / b`: as the right operand of `*` or `/` it must stay one
    operand, or C computes `(2 * (n + 127)) / 128` for `2 * cdiv(n, 128)`."""
    parsed = E.parse(expr)
    for n, m in [(1, 1), (97, 5), (1000003, 129), (200, 37)]:
        env = {"n": n, "m": m, "k": 0}
        spec_env = {**env, "block.x": 128, "block.y": 8, "block.z": 1}
        assert c_value(to_c(parsed, NAMES), env) == E.evaluate(parsed, spec_env), (expr, env, to_c(parsed, NAMES))


def test_to_c_needs_every_name() -> None:
    with pytest.raises(KeyError):
        to_c(E.parse("cdiv(rows, block.x)"), NAMES)
