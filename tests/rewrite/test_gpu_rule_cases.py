"""On a GPU: every rewrite of a rule validates on the kernels its folder declares with `gpu = true`
(rules/<id>/cases.toml, tests/rewrite/cases.py), written in several styles, at the timing size and
at check sizes chosen so that both a rule's fast path and its run-time fallback run (rows that fit
or not, outputs that do not divide evenly, misaligned windows, borders, tails shorter than a word).
Each rule's cases.toml says which kernels it runs on."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.evaluate.sweep import sweep
from cuopt.resources import data_dir
from cuopt.rewrite.engine import Engine
from cuopt.rewrite.rule import load_rules
from cuopt.targets import collect
from tests.rewrite.cases import rule_cases

pytestmark = pytest.mark.gpu

CASES = {case.id: case for case in rule_cases() if case.gpu}


@pytest.mark.parametrize("case", list(CASES))
def test_every_rewrite_of_the_rule_validates(gpu_client, tmp_path: Path, case: str) -> None:
    rule = CASES[case].rule
    path = CASES[case].prepare(tmp_path)
    rules = load_rules(data_dir("rules"))
    result = sweep(collect([path])[0], gpu_client, Engine({rule: rules[rule]}), gpu_client.device["arch"],
                   timed=False)
    assert "error" not in result, result
    bad = [f"{r['id']}: {r['status']}: {r['detail']}" for r in result["rewrites"] if r["status"] != "ok"]
    assert result["rewrites"] and not bad, "\n".join(bad) or result
