"""Targets carry their file's resolved compile settings: project, then spec, then command line; a
file reached twice is one target."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.compile_settings import CompileSettings
from cuopt.errors import CuoptError
from cuopt.targets import collect, cuda_files, rewrite_contexts

from tests.conftest import SAMPLES


def test_targets_and_rewrite_contexts_resolve_the_settings_per_file(tmp_path: Path) -> None:
    for d in ("a", "b", "inc", "cli"):
        (tmp_path / d).mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.cuopt]\ninclude = ["inc"]\ndefine = ["N=1", "P"]\n')
    spec = (SAMPLES / "saxpy.cuopt.toml").read_text()
    for d in ("a", "b"):
        (tmp_path / d / "saxpy.cu").write_bytes((SAMPLES / "saxpy.cu").read_bytes())
    (tmp_path / "a" / "saxpy.cuopt.toml").write_text('[compile]\ndefine = ["N=2"]\nflags = ["-G"]\n' + spec)
    (tmp_path / "b" / "saxpy.cuopt.toml").write_text(spec)
    cli = CompileSettings((tmp_path / "cli",), (("Q", "3"),))
    a, b = collect([tmp_path / "a" / "saxpy.cu", tmp_path / "b" / "saxpy.cu"], settings=cli)
    inc = (tmp_path / "inc").resolve()
    assert a.settings == CompileSettings((inc, tmp_path / "cli"), (("P", None), ("N", "2"), ("Q", "3")), ("-G",))
    assert b.settings == CompileSettings((inc, tmp_path / "cli"), (("N", "1"), ("P", None), ("Q", "3")))
    assert a.macro_sizes == frozenset()
    [ctx] = rewrite_contexts(tmp_path / "a" / "saxpy.cu", settings=cli)
    assert ctx.settings == a.settings
    (tmp_path / "b" / "saxpy.cuopt.toml").unlink()
    [ctx] = rewrite_contexts(tmp_path / "b" / "saxpy.cu", warnings=[])
    assert ctx.settings == CompileSettings((inc,), (("N", "1"), ("P", None)))


SCALE = """#include "sizes.h"
__global__ void scale(float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < NI * NJ) y[i] *= 2.0f;
}
"""
SCALE_SPEC = """[scale]
block = [256]
grid = ["cdiv(NI * NJ, block.x)"]
sizes = { NI = 512, NJ = 64 }
CHECKS
[scale.args]
y = "inout float32[NI * NJ]"
"""


def scale_file(tmp_path: Path, header: str, checks: str = "", sizes: str = "NI = 512, NJ = 64") -> Path:
    (tmp_path / "sizes.h").write_text(header)
    cu = tmp_path / "scale.cu"
    cu.write_text(SCALE)
    (tmp_path / "scale.cuopt.toml").write_text(
        SCALE_SPEC.replace("CHECKS", checks).replace("NI = 512, NJ = 64", sizes))
    return cu


def test_guarded_macro_sizes_are_given_to_the_compiler_per_size_set(tmp_path: Path) -> None:
    cu = scale_file(tmp_path, "#ifndef NI\n#define NI 512\n#endif\n#ifndef NJ\n#define NJ 64\n#endif\n")
    [t] = collect([cu])
    assert t.macro_sizes == {"NI", "NJ"}
    assert t.spec.check_sizes_derived and all(c["NI"] != 512 for c in t.spec.check_sizes)


def test_a_size_set_by_an_unguarded_define_is_checked_at_its_value_unless_the_spec_says_otherwise(
        tmp_path: Path) -> None:
    cu = scale_file(tmp_path, "#define NI 512\n#ifndef NJ\n#define NJ 64\n#endif\n")
    [t] = collect([cu])
    assert t.macro_sizes == {"NI", "NJ"}  # both set per size set, by editing their definitions
    assert t.spec.check_sizes and all(c["NI"] == 512 and c["NJ"] != 64 for c in t.spec.check_sizes)
    cu = scale_file(tmp_path, "#define NI 512\n#define NJ 64\n")
    warnings: list[str] = []
    [t] = collect([cu], warnings=warnings)
    assert t.macro_sizes == {"NI", "NJ"} and t.spec.check_sizes == ()
    assert warnings == ["scale.cuopt.toml: [scale] every size is set in the source without an `#ifndef` guard "
                        "(NI, NJ): checked at the one size only (check_sizes may give others: each size set edits "
                        "the definitions)"]
    cu = scale_file(tmp_path, "#define NI 512\n#define NJ 64\n", checks="check_sizes = [{ NI = 97 }]",
                    sizes="NI = 1024, NJ = 64")
    [t] = collect([cu])
    assert t.spec.sizes["NI"] == 1024 and t.spec.check_sizes == ({"NI": 97, "NJ": 64},)


def test_a_spec_that_contradicts_a_fixed_size_is_one_error(tmp_path: Path) -> None:
    constants = "constexpr int NI = 512;\nconstexpr int NJ = 64;\n"  # no edit of a `#define` sets these
    cu = scale_file(tmp_path, constants, sizes="NI = 1024, NJ = 64")
    with pytest.raises(CuoptError, match=r"^scale.cuopt.toml: \[scale\] sizes: NI = 1024, but the source fixes NI "
                                         r"at 512 .*; expected NI = 512$"):
        collect([cu])
    cu = scale_file(tmp_path, constants, checks="check_sizes = [{ NI = 97 }]")
    with pytest.raises(CuoptError, match=r"check_sizes: NI = 97, but the source fixes NI at 512"):
        collect([cu])
    warnings: list[str] = []
    [t] = collect([scale_file(tmp_path, constants)], warnings=warnings)
    assert t.macro_sizes == frozenset() and t.spec.check_sizes == ()
    assert warnings == ["scale.cuopt.toml: [scale] every size is set in the source without an `#ifndef` guard "
                        "(NI, NJ): checked at the one size only"]


def test_a_file_reached_twice_is_one_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `cuopt optimize samples samples/spelled` must not search (and write) the spelled files twice
    (tmp_path / "sub").mkdir()
    for name in ("a.cu", "sub/b.cu"):
        (tmp_path / name).write_text("__global__ void k(float *x) {}\n")
    monkeypatch.chdir(tmp_path)
    got = cuda_files([Path("."), Path("sub"), Path("sub/b.cu"), tmp_path / "a.cu"])
    assert got == [Path("a.cu"), Path("sub/b.cu")]


def test_without_a_spec_a_kernel_takes_the_launch_of_its_host_code(tmp_path: Path) -> None:
    """The launch assumed without a spec is the one `cuopt init` writes: the host's block and grid,
    not a guess from the kernel's body alone."""
    path = tmp_path / "t.cu"
    path.write_text("#define TILE 32\n#define ROWS 8\n"
                    "__global__ void copy_tile(float* out, const float* in, int w)\n{\n"
                    "    int x = blockIdx.x * TILE + threadIdx.x;\n    int y = blockIdx.y * TILE + threadIdx.y;\n"
                    "    for (int j = 0; j < TILE; j += ROWS) out[(y + j) * w + x] = in[(y + j) * w + x];\n}\n"
                    "void run(float* out, const float* in, int w)\n{\n"
                    "    dim3 grid(w / TILE, w / TILE), block(TILE, ROWS);\n"
                    "    copy_tile<<<grid, block>>>(out, in, w);\n}\n")
    warnings: list[str] = []
    (ctx,) = rewrite_contexts(path, warnings=warnings)
    assert ctx.launch.block == (32, 8)
    assert ctx.launch.describe() == "block 32x8, grid (w // TILE, w // TILE)"
    assert warnings == [f"{path}: no spec for kernel copy_tile; assuming the launch `cuopt init` infers "
                        f"({ctx.launch.describe()})"]


def test_init_then_collect_vary_an_unguarded_size_the_kernel_bounds_by_editing_its_header(tmp_path: Path) -> None:
    from cuopt.evaluate.build import plan_for
    from cuopt.source.overrides import COPIES

    from tests.helpers import cuopt

    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "dims.h").write_text("#define W 1024\n#define NK 64\n")
    cu = tmp_path / "blur.cu"
    cu.write_text('#include <cuda.h>\n#include <dims.h>\n'
                  "__global__ void blur(const float* in, float* out) {\n"
                  "    int x = blockIdx.x * blockDim.x + threadIdx.x;\n"
                  "    if (x < W) {\n        float s = 0.0f;\n"
                  "        for (int k = 0; k < NK; k++) s += in[x * NK + k];\n        out[x] = s;\n    }\n}\n")
    assert cuopt("init", str(cu), "-I", str(tmp_path / "inc")).exit_code == 0
    [t] = collect([cu])
    assert t.macro_sizes == {"W", "NK"} and t.spec.sizes == {"W": 1024, "NK": 64}
    assert t.spec.check_sizes and all(c["W"] != 1024 and c["NK"] == 64 for c in t.spec.check_sizes)
    plan = plan_for(t)
    assert [b.settings.defines for b in plan.builds] == [()] * len(plan.builds)
    check = dict(plan.builds[1].sizes)
    edited = plan.builds[1].edited(t.text, t.path)
    assert edited.source.splitlines()[:2] == ["#include <cuda.h>", f'#include "{COPIES}/0/dims.h"']
    assert edited.files == ((f"{COPIES}/0/dims.h", f"#define W {check['W']}\n#define NK 64\n"),)
