"""The init -> check property: on every program of tests/realworld and samples/programs (new ones
included, by glob), `cuopt init` writes a spec that is TOML and passes `cuopt check` unedited, and
names each kernel it leaves out in a comment with the reason. `check` compiles with nvcc on the
programs of NVCC_CHECKED (the template and unnamed-parameter cases); the rest are checked without
nvcc, which the real-world compile test and the samples' tests cover, to keep the CPU suite short."""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuopt.cli import app
from cuopt.compile_settings import NO_SETTINGS, resolve
from cuopt.spec.model import load as load_spec
from cuopt.targets import read_source
from tests.conftest import ROOT, nvcc_available

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REALWORLD = ROOT / "tests" / "realworld"
PROGRAMS = ROOT / "samples" / "programs"
CORPUS = sorted(REALWORLD.glob("*.cu")) + sorted(PROGRAMS.rglob("*.cu"))
NVCC_CHECKED = frozenset({"llmc_templates.cu", "torch_ext.cu", "functors.cu", "pairwise.cu"})
LEFT_OUT = re.compile(r"^# (?P<kernel>[A-Za-z_]\w*)(?:<[^()]*>)? \(line \d+\) is left out: (?P<why>\S.*)$", re.M)


def copied(source: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    """A copy of the program to run init on, and the `-I` options it needs: a program of
    samples/programs comes with the whole directory and includes its header-only siblings
    (`-I ../utilities`); a real-world program is one file."""
    if PROGRAMS not in source.parents:
        shutil.copy(source, tmp_path / source.name)
        return tmp_path / source.name, []
    shutil.copytree(PROGRAMS, tmp_path / "programs")
    path = tmp_path / "programs" / source.relative_to(PROGRAMS)
    headers = [d for d in sorted((tmp_path / "programs").iterdir()) if d.is_dir() and not any(d.rglob("*.cu"))]
    return path, [option for d in headers for option in ("-I", str(d))]


@pytest.mark.parametrize("source", CORPUS, ids=[str(p.relative_to(ROOT)) for p in CORPUS])
def test_init_writes_a_spec_that_checks_and_says_what_it_leaves_out(tmp_path: Path, source: Path) -> None:
    path, includes = copied(source, tmp_path)
    runner = CliRunner()
    result = runner.invoke(app, ["init", str(path), *includes])
    assert result.exit_code == 0, result.output
    spec_path = path.with_name(path.stem + ".cuopt.toml")
    text = spec_path.read_text()
    tomllib.loads(text)

    compile_ = [] if source.name in NVCC_CHECKED and nvcc_available() else ["--no-compile"]
    checked = path if PROGRAMS not in source.parents else path.parent  # a program's directory: its header too
    result = runner.invoke(app, ["check", *compile_, str(checked)])
    assert result.exit_code == 0 and " 0 errors" in result.output, result.output

    spec_file = load_spec(spec_path)
    described = {spec.entry.split("<")[0] for spec in spec_file.kernels.values()}
    left_out = {m.group("kernel") for m in LEFT_OUT.finditer(text)}
    kernels = {k.name for k in read_source(path, resolve(path, spec_file.settings, NO_SETTINGS)).kernels}
    assert kernels == described | left_out, f"kernels neither described nor left out: {kernels - described - left_out}"
    assert not described & left_out
