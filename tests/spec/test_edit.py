"""Spec text edits: `relocate` rewrites the [compile] table's include directories for a copy of the
file in another directory, keeping everything else as written."""
from __future__ import annotations

from pathlib import Path

from cuopt.spec.edit import relocate
from cuopt.spec.model import load

SPEC = """# written by hand
[compile]
include = ["../utilities", "inc"]  # shared helpers
define = ["NI=64"]

[k]
block = [256]
grid = ["cdiv(n, block.x)"]
sizes = { n = 1000 }

[k.args]
n = "n"
y = "inout float32[n]"
"""


def test_relocate_rewrites_include_dirs_for_the_new_directory(tmp_path: Path) -> None:
    for d in ("utilities", "prog/inc", "prog", "elsewhere/deeper"):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
    (tmp_path / "prog" / "k.cu").write_text("__global__ void k(int n, float* y) { y[0] = n; }\n")
    moved = relocate(SPEC, tmp_path / "prog", tmp_path / "elsewhere" / "deeper")
    assert moved == SPEC.replace('include = ["../utilities", "inc"]  # shared helpers\n',
                                 'include = ["../../utilities", "../../prog/inc"]\n')
    (tmp_path / "elsewhere" / "deeper" / "k.cuopt.toml").write_text(moved)
    spec = load(tmp_path / "elsewhere" / "deeper" / "k.cuopt.toml")
    assert spec.settings.include_dirs == ((tmp_path / "utilities").resolve(), (tmp_path / "prog" / "inc").resolve())


def test_relocate_keeps_the_text_when_nothing_moves(tmp_path: Path) -> None:
    assert relocate(SPEC, tmp_path, tmp_path) == SPEC
    without = SPEC.replace('include = ["../utilities", "inc"]  # shared helpers\n', "")
    assert relocate(without, tmp_path, tmp_path / "x") == without
    multi = SPEC.replace('include = ["../utilities", "inc"]  # shared helpers\n', 'include = [\n  "inc",\n]\n')
    assert relocate(multi, tmp_path / "a", tmp_path / "b") == without.replace(
        'define = ["NI=64"]', 'include = ["../a/inc"]\ndefine = ["NI=64"]')
