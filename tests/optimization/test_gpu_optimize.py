"""On a GPU: `cuopt optimize --budget 2m` over every sample (one call, the budget shared); each
written file then benches and validates on its own and is not slower than its original."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuopt.cli import app

from tests.helpers import kernel_text

pytestmark = pytest.mark.gpu


def _bench(path: Path) -> dict:
    result = CliRunner().invoke(app, ["bench", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)[0]


def test_optimize_every_sample_and_bench_the_results(samples: Path) -> None:
    originals = {p.name: p.read_text() for p in samples.glob("*.cu")}
    result = CliRunner().invoke(app, ["optimize", str(samples), "--budget", "2m", "--json", "--no-diff"])
    assert result.exit_code == 0, result.output
    summaries = json.loads(result.stdout)
    assert {Path(s["file"]).name for s in summaries} == set(originals)
    written = [s for s in summaries if s["written"]]
    assert written, "nothing was written"
    for s in written:  # each phase's seconds, which add up to no more than the kernel's
        phases = s["budget"]["phases"]
        assert set(phases) == {"baseline_s", "search_s", "confirm_s"} and all(v >= 0 for v in phases.values())
        assert sum(phases.values()) <= s["budget"]["used_s"] + 0.2
    for s in written:
        path = Path(s["file"])
        assert path.read_text() != originals[path.name]
        after = _bench(path)
        assert after["status"] == "ok", after
        backup = sorted((path.parent / ".cuopt" / "backups").glob(f"{path.name}.*"))[-1]
        restored = path.parent / "original" / path.name
        restored.parent.mkdir(exist_ok=True)
        restored.write_bytes(backup.read_bytes())
        spec_backup = sorted((path.parent / ".cuopt" / "backups").glob(f"{path.stem}.cuopt.toml.*"))[-1]
        (restored.parent / f"{path.stem}.cuopt.toml").write_bytes(spec_backup.read_bytes())
        before = _bench(restored)
        assert after["ms"] <= before["ms"] * 1.05, (path.name, before["ms"], after["ms"])
    for s in summaries:
        if not s["written"]:
            assert Path(s["file"]).read_text() == originals[Path(s["file"]).name]


def test_a_file_of_three_kernels_keeps_every_accepted_rewrite(samples: Path) -> None:
    names = ("matvec", "transpose", "stencil2d")
    cu = samples / "three.cu"
    cu.write_text("\n".join((samples / f"{n}.cu").read_text() for n in names))
    (samples / "three.cuopt.toml").write_text("\n".join((samples / f"{n}.cuopt.toml").read_text() for n in names))
    original = cu.read_bytes()
    result = CliRunner().invoke(app, ["optimize", str(cu), "--budget", "90s", "--json", "--no-diff"])
    assert result.exit_code == 0, result.output
    summaries = json.loads(result.stdout)
    assert [s["kernel"] for s in summaries] == list(names)
    written = [s for s in summaries if s["status"] == "written"]
    assert len(written) >= 2, [(s["kernel"], s["status"], s["message"]) for s in summaries]
    text = cu.read_bytes()
    for s in summaries:
        if s["status"] == "written":
            final = json.loads(Path(s["trace"]).read_text())["chosen"]["steps"][-1]["source"].encode()
        else:
            final = original
        assert kernel_text(text, s["kernel"]) == kernel_text(final, s["kernel"]), s["kernel"]
    after = CliRunner().invoke(app, ["bench", str(cu), "--json"])
    assert after.exit_code == 0, after.output
    assert [b["status"] for b in json.loads(after.stdout)] == ["ok"] * 3

