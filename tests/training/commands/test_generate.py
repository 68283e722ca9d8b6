"""`cuopt-train generate` through the CLI: the corpus and its summary, the refusal to overwrite,
`--force`, `--families` and an unknown family."""
from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cuopt.training.cli import app
from tests.helpers import one_error_line

runner = CliRunner()


def generate(*args: str):
    return runner.invoke(app, ["generate", *args])


def test_generate_writes_kernels_specs_and_a_manifest(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    result = generate(str(out), "--count", "24", "--seed", "3")
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["seed"], manifest["count"], len(manifest["kernels"])) == (3, 24, 24)
    held = sum(k["split"] == "heldout" for k in manifest["kernels"])
    assert result.output.strip() == (f"wrote 24 kernels to {out} (elementwise 6, reduction 6, stencil 4, matmul 4, "
                                     f"transpose 2, histogram 2; {held} held out)")
    assert len(list(out.glob("*.cu"))) == len(list(out.glob("*.cuopt.toml"))) == 24


def test_a_non_empty_directory_is_refused_without_force(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    result = generate(str(tmp_path), "--count", "6")
    assert result.exit_code != 0
    assert "not empty" in one_error_line(result) and "--force" in one_error_line(result)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    result = generate(str(tmp_path), "--count", "6", "--force")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert len(list(tmp_path.glob("*.cu"))) == 6


def test_force_replaces_a_previous_corpus(tmp_path: Path) -> None:
    assert generate(str(tmp_path), "--count", "24").exit_code == 0
    result = generate(str(tmp_path), "--count", "12", "--families", "matmul,stencil", "--force")
    assert result.exit_code == 0, result.output
    assert "stencil 6, matmul 6" in result.output
    kernels = json.loads((tmp_path / "manifest.json").read_text())["kernels"]
    assert sorted(p.stem for p in tmp_path.glob("*.cu")) == sorted(k["name"] for k in kernels)
    assert {k["family"] for k in kernels} == {"matmul", "stencil"}


def test_an_unknown_family_is_an_error(tmp_path: Path) -> None:
    result = generate(str(tmp_path / "corpus"), "--families", "matmul,gemm")
    assert result.exit_code != 0
    line = one_error_line(result)
    assert "unknown kernel family 'gemm'" in line and "histogram" in line
    assert not (tmp_path / "corpus").exists()
