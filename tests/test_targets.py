"""Targets carry their file's resolved compile settings: project, then spec, then command line."""
from __future__ import annotations

from pathlib import Path

from cuopt.compile_settings import CompileSettings
from cuopt.targets import collect, rewrite_contexts

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
