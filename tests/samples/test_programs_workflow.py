"""The user's workflow on whole programs, untouched: `cuopt init FILE -I ../utilities` writes a spec
with no TODO (only scalars set at run time may remain), and `cuopt check`, `cuopt bench --dry-run`
and `cuopt rewrites` work on the files as they are. On a GPU, `cuopt optimize` on them changes
nothing but kernel bodies and launch sites."""
from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path

import pytest

from cuopt.source.kernels import load
from cuopt.source.launches import launch_sites
from cuopt.spec.model import load as load_spec

from tests.conftest import SAMPLES, requires_nvcc
from tests.helpers import cuopt

PROGRAMS = SAMPLES / "programs"
PLAIN = ["conv2d", "covariance", "gemm", "mvt"]  # programs whose kernels are not templates


def copy_program(tmp_path: Path, name: str) -> Path:
    """The program's directory and the shared utilities beside it, as in the repository."""
    shutil.copytree(PROGRAMS / "utilities", tmp_path / "utilities")
    shutil.copytree(PROGRAMS / name, tmp_path / name)
    return next((tmp_path / name).glob("*.cu"))


def init(cu: Path, include: str | None = None) -> str:
    """`cuopt init` with the include path (by default the utilities beside the program's directory)."""
    result = cuopt("init", str(cu), "-I", include or str(cu.parent.parent / "utilities"))
    assert result.exit_code == 0, result.output
    return cu.with_name(cu.stem + ".cuopt.toml").read_text()


@pytest.mark.parametrize("name", PLAIN)
def test_init_describes_every_kernel_without_todos(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
                                                   ) -> None:
    cu = copy_program(tmp_path, name)
    monkeypatch.chdir(cu.parent)  # -I ../utilities as a user types it, relative to the current directory
    text = init(cu.relative_to(cu.parent), "../utilities")
    todos = [ln for ln in text.splitlines()[1:] if "TODO" in ln]
    assert todos == [], todos
    spec = load_spec(cu.with_name(cu.stem + ".cuopt.toml"))
    assert set(spec.kernels) == {k.name for k in load(cu.read_bytes()).kernels}
    assert spec.settings.include_dirs == ((tmp_path / "utilities").resolve(),)
    for k in spec.kernels.values():
        assert all(v > 1 for v in k.sizes.values()), k.sizes
        assert k.launch.block != (256,) or len(k.launch.grid) == 1


@requires_nvcc
@pytest.mark.parametrize("name", PLAIN)
def test_check_bench_and_rewrites_work_on_the_untouched_files(tmp_path: Path, name: str) -> None:
    cu = copy_program(tmp_path, name)
    init(cu)
    original = cu.read_bytes()
    check = cuopt("check", str(cu))
    assert check.exit_code == 0 and " 0 errors" in check.output, check.output
    bench = cuopt("bench", str(cu), "--dry-run", "--json")
    assert bench.exit_code == 0, bench.output
    rows = json.loads(bench.stdout)
    assert rows and all(r["status"] == "compiled" for r in rows), rows
    rewrites = cuopt("rewrites", str(cu), "--json")
    assert rewrites.exit_code == 0, rewrites.output
    offered = {r["kernel"] for r in json.loads(rewrites.stdout)}
    assert offered == {k.name for k in load(original).kernels}
    assert cu.read_bytes() == original


def changed_outside(before: bytes, after: bytes) -> list[str]:
    """Lines that differ between the two files outside kernel definitions, launch sites and cuopt's
    launch comments."""
    def allowed(source: bytes) -> set[int]:
        f = load(source)
        lines = {n for k in f.kernels for n in range(k.node.start_point.row, k.node.end_point.row + 1)}
        for k in f.kernels:
            lines |= {s.line - 1 for s in launch_sites(source, k.name)}
        return lines | {i for i, ln in enumerate(source.decode().splitlines()) if ln.startswith("// cuopt: launch")}

    old, new = before.decode().splitlines(), after.decode().splitlines()
    ok_old, ok_new = allowed(before), allowed(after)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        out += [f"-{old[i]}" for i in range(i1, i2) if i not in ok_old]
        out += [f"+{new[j]}" for j in range(j1, j2) if j not in ok_new]
    return out


def test_changed_outside_sees_host_edits() -> None:
    src = (PROGRAMS / "mvt" / "mvt.cu").read_bytes()
    assert changed_outside(src, src) == []
    body = src.replace(b"int i = blockIdx.x * blockDim.x + threadIdx.x;", b"int i = threadIdx.x;", 1)
    assert body != src and changed_outside(src, body) == []
    host = src.replace(b"int main(", b"int  main(")
    assert changed_outside(src, host) != []


@pytest.mark.gpu
def test_optimize_changes_only_kernels_and_launch_sites(tmp_path: Path) -> None:
    sources = {}
    for name in PLAIN:
        cu = copy_program(tmp_path / name, name)
        init(cu)
        sources[cu] = cu.read_bytes()
    result = cuopt("optimize", *(str(cu) for cu in sources), "--budget", "3m", "--json", "--no-diff")
    assert result.exit_code == 0, result.output
    summaries = json.loads(result.stdout)
    assert {s["kernel"] for s in summaries} == {k.name for src in sources.values() for k in load(src).kernels}
    assert any(s["status"] == "written" for s in summaries), [(s["kernel"], s["message"]) for s in summaries]
    for cu, before in sources.items():
        assert changed_outside(before, cu.read_bytes()) == [], cu.name
        after = cuopt("bench", str(cu), "--json")
        assert after.exit_code == 0, after.output
        assert {b["status"] for b in json.loads(after.stdout)} == {"ok"}, after.stdout
