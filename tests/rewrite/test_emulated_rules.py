"""Without a GPU: every rewrite of the rules that synchronize only within a block computes what
the original computes, run on the CPU at small sizes (tests/rewrite/emulate.py), on the cases
each rule's folder declares with `emulate` sizes (rules/<id>/cases.toml, tests/rewrite/cases.py),
so that a transform's mistake shows in CI and not only on a GPU machine."""
from __future__ import annotations

import os
import queue
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from cuopt.rewrite.engine import Engine
from cuopt.targets import collect, rewrite_contexts
from tests.rewrite.cases import RuleCase, rule_cases
from tests.rewrite.emulate import Program, Variant, compiler, differences, precompiled, program

pytestmark = pytest.mark.skipif(compiler() is None, reason="needs g++ with C++20 <barrier>")

CASES = {case.id: case for case in rule_cases() if case.emulate}


def _prepare(case: RuleCase, work: Path) -> Program:
    """The case's kernel and every variant of its rule the CPU run takes (cases.toml's emulate_variants)."""
    path = case.prepare(work)
    target = collect([path])[0]
    ctx = rewrite_contexts(path)[0]
    offers = [o for o in Engine.default().offers(ctx, only={case.rule}) if case.emulates(o.action.param_dict)]
    assert offers, f"{case.rule} does not apply to {path.name}"
    variants = [Variant(o.action.id, o.result.source, o.result.launch) for o in offers]
    return program(target, variants, list(case.emulate), work / "emulated")


@pytest.fixture(scope="module")
def verdicts(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str] | str]:
    """The differences of every case this run selected (`-k window` runs one rule's); the programs
    build (on one precompiled emulation.h) and run side by side, one on each CPU, while the next
    cases are prepared."""
    selected = [item.callspec.params["case"] for item in request.session.items
                if item.module is request.module and hasattr(item, "callspec")]
    headers = precompiled(tmp_path_factory.mktemp("emulation-header"))
    cpus: queue.SimpleQueue[int] = queue.SimpleQueue()
    for cpu in sorted(os.sched_getaffinity(0)):
        cpus.put(cpu)

    def on_a_free_cpu(p: Program) -> dict[str, str]:
        cpu = cpus.get()
        try:
            return differences(p, headers, cpu)
        finally:
            cpus.put(cpu)

    found: dict[str, Future[dict[str, str]] | str] = {}
    with ThreadPoolExecutor(len(os.sched_getaffinity(0))) as pool:
        for case in selected:
            try:
                found[case] = pool.submit(on_a_free_cpu, _prepare(CASES[case], tmp_path_factory.mktemp("emulated")))
            except AssertionError as exc:
                found[case] = str(exc)
        return {case: f if isinstance(f, str) else f.result() for case, f in found.items()}


@pytest.mark.parametrize("case", list(CASES))
def test_every_rewrite_of_the_rule_computes_what_the_original_does(verdicts: dict[str, dict[str, str] | str],
                                                                   case: str) -> None:
    found = verdicts[case]
    assert not isinstance(found, str), found
    assert not found
