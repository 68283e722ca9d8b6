"""On a GPU: every window rewrite validates, at the timing size and at check sizes where the outputs
do not divide evenly, the taps are fewer than a vector step or start off a multiple of 4 (so both
the window path and the per-output original run): on the conv1d sample, a FIR filter with a macro
tap count and __ldg loads, a centered stencil, and an integer box sum."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cuopt.evaluate.sweep import sweep
from cuopt.resources import data_dir
from cuopt.rewrite.engine import Engine
from cuopt.rewrite.rule import load_rules
from cuopt.targets import collect
from tests.conftest import SAMPLES

pytestmark = pytest.mark.gpu

HERE = Path(__file__).parent / "window"
CASES = {"conv1d": SAMPLES / "conv1d.cu", "fir_relu": HERE / "fir_relu.cu", "centered": HERE / "centered.cu",
         "box_int": HERE / "box_int.cu"}


@pytest.mark.parametrize("name", list(CASES))
def test_every_window_rewrite_validates(gpu_client, tmp_path: Path, name: str) -> None:
    source = CASES[name]
    for suffix in (".cu", ".cuopt.toml"):
        shutil.copy(source.with_suffix(suffix), tmp_path)
    rules = load_rules(data_dir("rules"))
    engine = Engine({"window": rules["window"]})
    result = sweep(collect([tmp_path / source.name])[0], gpu_client, engine, gpu_client.device["arch"], timed=False)
    assert "error" not in result, result
    bad = [f"{r['id']}: {r['status']}: {r['detail']}" for r in result["rewrites"] if r["status"] != "ok"]
    assert len(result["rewrites"]) == 2 and not bad, "\n".join(bad) or result
