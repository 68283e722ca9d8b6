"""On a GPU: every row-cache rewrite validates, at the timing size and at check sizes where the row
fits, does not fit, or is misaligned (so both the cached loops and the original loops run): on a
hand-written warp-per-row RMS norm and block-per-row softmax, and on the softmax and layernorm
samples after row-parallel."""
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

HERE = Path(__file__).parent / "rowcache"
CASES = {
    "rmsnorm_warp": (HERE / "rmsnorm_warp.cu", None),
    "softmax_block": (HERE / "softmax_block.cu", None),
    "softmax_warp": (SAMPLES / "softmax.cu", "row-parallel@2:1/unit=warp,block=128"),
    "layernorm_block": (SAMPLES / "layernorm.cu", "row-parallel@2:1/unit=block,block=256"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_every_row_cache_rewrite_validates(gpu_client, tmp_path: Path, name: str) -> None:
    source, first = CASES[name]
    path = tmp_path / source.name
    if first is None:
        for suffix in (".cu", ".cuopt.toml"):
            shutil.copy(source.with_suffix(suffix), tmp_path)
    else:
        result = cuopt("rewrites", str(source), "-a", first, "-o", str(path))
        assert result.exit_code == 0, result.output
    rules = load_rules(data_dir("rules"))
    engine = Engine({"row-cache": rules["row-cache"]})
    result = sweep(collect([path])[0], gpu_client, engine, gpu_client.device["arch"], timed=False)
    assert "error" not in result, result
    bad = [f"{r['id']}: {r['status']}: {r['detail']}" for r in result["rewrites"] if r["status"] != "ok"]
    assert result["rewrites"] and not bad, "\n".join(bad) or result
