"""On a GPU: every single-rewrite variant of every sample, opt-in rules included, validates against
the original at the timing size and every check size. A failure here is a bug in that rule's
legality checks (or, for fast-math, a sample whose tolerance is too tight for the intrinsics)."""
from __future__ import annotations

import pytest

from cuopt.evaluate.sweep import sweep
from cuopt.rewrite.engine import Engine
from cuopt.targets import collect
from tests.conftest import SAMPLES, sample_names

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", sample_names())
def test_every_single_rewrite_validates(gpu_client, name: str) -> None:
    target = collect([SAMPLES / f"{name}.cu"])[0]
    result = sweep(target, gpu_client, Engine.default(), gpu_client.device["arch"], timed=False,
                   options=frozenset({"fast-math"}))
    assert "error" not in result, result
    assert result["rewrites"], f"no rewrite applies to {name}"
    bad = [f"{r['id']}: {r['status']}: {r['detail']}" for r in result["rewrites"] if r["status"] != "ok"]
    assert not bad, "\n".join(bad)
