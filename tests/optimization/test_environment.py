"""The GPU environment's measurements with a fake evaluator (no nvcc, no GPU): a variant whose
cubin and launch are those of a variant the search already has is not run, reuses that
measurement marked `same_binary_as` and is not counted as an evaluation; another launch, or a
twin known only to another search, is measured and counted. With nvcc: a real rewrite whose
cubin is the original's."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cuopt.evaluate.evaluator import Outcome, Variant
from cuopt.evaluate.stats import Timing
from cuopt.optimization.environment import GpuEnvironment, SharedMeasurements, binary_key, variant_key
from cuopt.search.budget import Budget
from cuopt.search.mcts import Measurement
from cuopt.spec import expr as E
from cuopt.spec.model import Launch
from tests.conftest import requires_nvcc

LAUNCH = Launch(block=(256,), grid=(E.parse("cdiv(n, block.x)"),))
WIDE = Launch(block=(512,), grid=(E.parse("cdiv(n, block.x)"),))


@dataclass
class FakeCompiled:
    cubin: Path
    symbol: str = "k"
    resources: Any = None
    sized: tuple[Any, ...] = ()


class FakeEvaluator:
    """'Compiles' a source to a cubin holding the text after `// binary:` (so two sources can share
    a binary) and 'runs' it at a time given by the same text; counts the runs."""

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.runs = tmp, 0

    def compile(self, variant: Variant) -> FakeCompiled:
        binary = variant.source.split("// binary:")[1].strip()
        path = self.tmp / f"{variant_key(variant)}.cubin"
        path.write_bytes(binary.encode())
        return FakeCompiled(path)

    def evaluate(self, variant: Variant, compiled: FakeCompiled) -> Outcome:
        self.runs += 1
        ms = float(compiled.cubin.read_text().split("ms=")[1])
        return Outcome("ok", timing=Timing(ms, 0.01, ms, 10))


def env(tmp_path: Path, shared: SharedMeasurements | None = None) -> tuple[GpuEnvironment, FakeEvaluator]:
    ev = FakeEvaluator(tmp_path)
    return GpuEnvironment(ev, None, None, frozenset(), False, shared, workers=1), ev  # type: ignore[arg-type]


def variant(text: str, binary: str, launch: Launch = LAUNCH) -> Variant:
    return Variant(f"{text}\n// binary: {binary}\n", launch)


def budget() -> Budget:
    return Budget(60.0)


def test_a_variant_of_the_same_binary_and_launch_reuses_the_measurement(tmp_path: Path) -> None:
    e, ev = env(tmp_path)
    first, twin = variant("a", "ms=2.0"), variant("a, unrolled by hand", "ms=2.0")
    [m1] = e.evaluate([first], budget())
    [m2] = e.evaluate([twin], budget())
    assert ev.runs == 1
    assert (m2.status, m2.ms, m2.extra["same_binary_as"]) == ("ok", 2.0, variant_key(first))
    assert m1.extra["binary"] == m2.extra["binary"] and "same_binary_as" not in m1.extra
    [other_launch] = e.evaluate([variant("a, wider", "ms=2.0", WIDE)], budget())
    assert ev.runs == 2 and "same_binary_as" not in other_launch.extra


def test_a_twin_of_the_original_reuses_the_baseline(tmp_path: Path) -> None:
    e, ev = env(tmp_path)
    original = variant("original", "ms=5.0")
    baseline = Measurement("ok", 5.0, 0.01)
    e.remember(original, ev.compile(original), baseline)
    [m] = e.evaluate([variant("original, restrict", "ms=5.0")], budget())
    assert ev.runs == 0 and m.ms == 5.0 and m.extra["same_binary_as"] == variant_key(original)


def test_the_search_does_not_count_a_binary_twin_as_an_evaluation(tmp_path: Path) -> None:
    from cuopt.search.mcts import MCTS
    from cuopt.search.policy import UniformPolicy
    from tests.helpers import Action, Offer

    e, ev = env(tmp_path)
    original = variant("original", "ms=5.0")
    children = [variant("faster", "ms=4.0"), variant("faster again, same code", "ms=4.0"), variant("no-op", "ms=5.0")]
    e.expand = lambda state, history: ([(Offer(Action(f"r{i}", f"r{i}", 1)), c) for i, c in enumerate(children)]
                                       if state is original else [])  # type: ignore[method-assign]
    baseline = Measurement("ok", 5.0, 0.01)
    e.remember(original, ev.compile(original), baseline)
    search = MCTS(e, UniformPolicy(), original, baseline)
    search.run(Budget(60.0, 10))
    assert ev.runs == 1 and search.evaluations == 1
    twins = [n for n in search.nodes if n.measurement is not None and "same_binary_as" in n.measurement.extra]
    assert len(twins) == 2


def test_a_twin_known_only_to_another_search_counts_there(tmp_path: Path) -> None:
    shared = SharedMeasurements()
    a, ev_a = env(tmp_path, shared)
    first, twin = variant("x", "ms=3.0"), variant("x again", "ms=3.0")
    a.evaluate([first, twin], budget())
    assert ev_a.runs == 1
    b, ev_b = env(tmp_path, shared)
    [m] = b.evaluate([twin], budget())  # search b never had `first`: the twin is a measurement for it
    assert ev_b.runs == 0 and m.extra.get("shared") and "same_binary_as" not in m.extra
    [again] = b.evaluate([first], budget())  # now b has the binary: `first` is b's free twin
    assert again.extra["same_binary_as"] == variant_key(twin)


@pytest.mark.parametrize("status", ["wrong-answer", "fault"])
def test_a_failing_binary_fails_its_twins_alike(tmp_path: Path, status: str) -> None:
    e, ev = env(tmp_path)
    ev.evaluate = lambda v, c: (setattr(ev, "runs", ev.runs + 1), Outcome(status, "broken"))[1]  # type: ignore
    [m1, m2] = e.evaluate([variant("p", "ms=1.0"), variant("q", "ms=1.0")], budget())
    assert ev.runs == 1 and (m1.status, m2.status) == (status, status) and m2.detail == "broken"


@requires_nvcc
def test_unrolling_a_loop_nvcc_unrolls_anyway_gives_the_same_binary(tmp_path: Path) -> None:
    """Why the environment looks at binaries: a real rewrite that changes the source and not the cubin."""
    from cuopt.evaluate.compile import compile_kernel
    from cuopt.training import corpus
    from cuopt.rewrite.context import Context
    from cuopt.rewrite.engine import Engine
    from cuopt.targets import collect

    [kernel] = [k for k in corpus.generate(96, seed=0) if k.name == "stencil_001"]
    corpus.write([kernel], tmp_path / "corpus", seed=0)
    [target] = collect([tmp_path / "corpus" / "stencil_001.cu"])
    ctx = Context(target.source.source, target.spec.launch, target.kernel.name, target.spec)
    [offer] = [o for o in Engine.default().offers(ctx) if o.action.id.startswith("unroll@") and o.action.id.endswith("full")]
    original = Variant(target.text, target.spec.launch)
    unrolled = Variant(offer.result.source.decode(), offer.result.launch)
    assert unrolled.source != original.source and variant_key(unrolled) != variant_key(original)
    compiled = [compile_kernel(v.source, target.kernel.name) for v in (original, unrolled)]
    assert binary_key(compiled[0], original) == binary_key(compiled[1], unrolled)
