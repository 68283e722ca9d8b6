"""On a GPU: every grid-stride vectorize rewrite validates, at the timing size and at check sizes
with a tail shorter than a word (so the scalar path runs too): a hand-written grid-stride saxpy
and byte histogram (global atomics), and the histogram sample after privatize."""
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
from tests.helpers import cuopt

pytestmark = pytest.mark.gpu

HERE = Path(__file__).parent / "gridstride"
CASES = {
    "saxpy_gs": (HERE / "saxpy_gs.cu", ()),
    "hist_gs": (HERE / "hist_gs.cu", ()),
    "histogram_privatized": (SAMPLES / "histogram.cu", ("block-size@2:1/block=1024", "privatize@6:9/per_thread=64")),
}


@pytest.mark.parametrize("name", list(CASES))
def test_every_grid_stride_vectorize_rewrite_validates(gpu_client, tmp_path: Path, name: str) -> None:
    source, steps = CASES[name]
    path = tmp_path / source.name
    if not steps:
        for suffix in (".cu", ".cuopt.toml"):
            shutil.copy(source.with_suffix(suffix), tmp_path)
    else:
        args = [a for step in steps for a in ("-a", step)]
        result = cuopt("rewrites", str(source), *args, "-o", str(path))
        assert result.exit_code == 0, result.output
    engine = Engine({"vectorize": load_rules(data_dir("rules"))["vectorize"]})
    result = sweep(collect([path])[0], gpu_client, engine, gpu_client.device["arch"], timed=False)
    assert "error" not in result, result
    rows = result["rewrites"]
    assert rows, result
    bad = [f"{r['id']}: {r['status']}: {r['detail']}" for r in rows if r["status"] != "ok"]
    assert not bad, "\n".join(bad)
