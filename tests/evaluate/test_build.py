"""Build plans: one build per distinct value of the macro sizes (set by editing their definitions, a
`-D` only for a size the user's own settings define), each size set run with its own."""
from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from cuopt.compile_settings import CompileSettings
from cuopt.errors import CuoptError
from cuopt.evaluate.build import BuildPlan, compile_all
from cuopt.evaluate.client import WorkerClient
from cuopt.evaluate.compile import CompileError, Compiled, Resources
from cuopt.evaluate.evaluator import KernelEvaluator, TimingOptions, Variant
from cuopt.spec.model import KernelSpec, parse

from tests.conftest import SAMPLES, requires_nvcc
from tests.evaluate.test_evaluator import saxpy_bound

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SIZED = "tests.evaluate.fake_backend:SizedBackend"
BASE = CompileSettings(include_dirs=(Path("/inc"),), defines=(("FAST", None),))


def spec(sizes: str, check_sizes: str) -> KernelSpec:
    text = (f'[k]\nblock = [32]\ngrid = ["cdiv(NI, block.x)"]\nsizes = {sizes}\ncheck_sizes = {check_sizes}\n'
            '[k.args]\np = "out float32[NI]"\n')
    return parse(tomllib.loads(text), Path("k.cuopt.toml")).kernels["k"]


def test_no_macro_sizes_one_build_for_every_size_set() -> None:
    plan = BuildPlan.of(spec("{ NI = 2048, NJ = 4 }", "[{ NI = 97 }, { NI = 13 }]"), "k", BASE)
    assert [b.settings for b in plan.builds] == [BASE] and plan.builds[0].sizes == () and plan.build_of == (0, 0, 0)


def test_a_build_per_distinct_value_of_the_macro_sizes() -> None:
    plan = BuildPlan.of(spec("{ NI = 2048, NJ = 4 }", "[{ NI = 97 }, { NJ = 5 }, { NI = 97 }]"), "k", BASE,
                        frozenset({"NI"}))
    assert [b.sizes for b in plan.builds] == [(("NI", 2048),), (("NI", 97),)]
    assert all(b.settings == BASE for b in plan.builds)  # no -DNI: the definitions are edited
    assert plan.build_of == (0, 1, 0, 1)  # timing, then check sizes; NJ is not a macro


def test_a_size_the_user_defines_is_also_set_by_its_define() -> None:
    own = CompileSettings(defines=(("FAST", None), ("NI", "512")))
    plan = BuildPlan.of(spec("{ NI = 2048 }", "[{ NI = 97 }]"), "k", own, frozenset({"NI"}))
    assert [dict(b.settings.defines) for b in plan.builds] == [{"FAST": None, "NI": "2048"}, {"FAST": None, "NI": "97"}]
    assert [b.sizes for b in plan.builds] == [(("NI", 2048),), (("NI", 97),)]


def test_a_macro_size_must_be_a_size_of_the_spec() -> None:
    with pytest.raises(CuoptError, match=r"k.cuopt.toml: \[k\] sizes: macro size 'NX' is not a size of the spec"):
        BuildPlan.of(spec("{ NI = 2048 }", "[{ NI = 97 }]"), "k", BASE, frozenset({"NX"}))


def fake(name: str) -> Compiled:
    return Compiled(Path(name), "saxpy", Resources(registers=10), "sm_90")


def test_combine_gives_each_size_set_its_build_and_names_the_failing_definition() -> None:
    plan = BuildPlan.of(spec("{ NI = 2048 }", "[{ NI = 97 }, { NI = 2048 }]"), "k", BASE, frozenset({"NI"}))
    combined = plan.combine([fake("a.cubin"), fake("b.cubin")])
    assert isinstance(combined, Compiled) and combined.cubin == Path("a.cubin")
    assert [combined.at(i).cubin for i in range(3)] == [Path("a.cubin"), Path("b.cubin"), Path("a.cubin")]
    failed = plan.combine([fake("a.cubin"), CompileError("nvcc failed: line 3: error: x", "log")])
    assert isinstance(failed, CompileError) and str(failed) == "at NI=97: nvcc failed: line 3: error: x"
    single = BuildPlan.of(spec("{ NI = 2048 }", "[{ NI = 97 }]"), "k", BASE)
    assert single.combine([fake("a.cubin")]).at(1).cubin == Path("a.cubin")


@pytest.fixture
def sized_client() -> Iterator[WorkerClient]:
    client = WorkerClient(SIZED, timeout_s=1.0)
    client.start()
    yield client
    client.close()


def test_each_size_set_runs_its_own_build(sized_client: WorkerClient) -> None:
    ev = KernelEvaluator(SAMPLES / "saxpy.cu", saxpy_bound(), sized_client, arch="sm_90",
                         timing=TimingOptions(min_runs=3, min_ms=0.0, max_s=0.5), macro_sizes=frozenset({"n"}))
    try:
        builds = ev.plan.combine([fake("v.n1000.cubin"), fake("v.n97.cubin")])
        assert isinstance(builds, Compiled)
        assert ev.set_reference(builds, ev.spec.launch).ok
        outcome = ev.evaluate(Variant("unused", ev.spec.launch), builds)
        assert outcome.status == "ok", outcome
        assert [c.elements for c in outcome.comparisons] == [1000, 97]
        one = ev.evaluate(Variant("unused", ev.spec.launch), fake("v.n1000.cubin"))  # one cubin for both sizes
        assert one.status == "launch-error" and "built for n=1000, launched at n=97" in one.detail
    finally:
        ev.close()


MACRO_KERNEL = """\
// {tag}
#ifndef NI
#define NI 2048
#endif
__global__ void k(float* p) {{ p[0] = NI; }}
"""


@requires_nvcc
def test_macro_sizes_compile_once_per_size_set_keyed_on_the_definitions() -> None:
    source = MACRO_KERNEL.format(tag=uuid.uuid4())
    plan = BuildPlan.of(spec("{ NI = 2048 }", "[{ NI = 97 }, { NI = 2048 }]"), "k", CompileSettings(),
                        frozenset({"NI"}))
    built = plan.compile(source, "sm_90")
    assert [b.cached for b in built.sized] == [False, False, False]  # the third is the first build
    assert built.at(0).cubin == built.at(2).cubin != built.at(1).cubin
    again = plan.compile(source, "sm_90")
    assert all(b.cached for b in again.sized)
    [many] = compile_all([(plan, source)], "sm_90")
    assert isinstance(many, Compiled) and [b.cubin for b in many.sized] == [b.cubin for b in built.sized]
    plain = BuildPlan.of(spec("{ NI = 2048 }", "[{ NI = 97 }]"), "k", CompileSettings()).compile(source, "sm_90")
    assert not plain.sized and plain.cubin == built.at(0).cubin  # NI set to its own value: the same source
    edited = BuildPlan.of(spec("{ NI = 2048 }", "[{ NI = 97 }]"), "k", CompileSettings(), frozenset({"NI"}))
    assert edited.builds[1].edited(source, Path("k.cu")).source == source.replace("NI 2048", "NI 97")


MACRO_TEMPLATE = """\
// {tag}
#ifndef NI
#define NI 2048
#endif
template <typename T, int ITEMS>
__global__ void k(T* p) {{ p[0] = NI * ITEMS; }}
"""


@requires_nvcc
def test_a_template_target_builds_its_instantiation_per_size_set(tmp_path: Path) -> None:
    from cuopt.evaluate.build import plan_for
    from cuopt.targets import collect

    cu = tmp_path / "k.cu"
    cu.write_text(MACRO_TEMPLATE.format(tag=uuid.uuid4()))
    (tmp_path / "k.cuopt.toml").write_text('[k_f32]\nkernel = "k<float, 4>"\nblock = [32]\ngrid = ["1"]\n'
                                           'sizes = { NI = 2048 }\ncheck_sizes = [{ NI = 97 }]\n'
                                           '[k_f32.args]\np = "out float32[NI]"\n')
    [target] = collect([cu])
    plan = plan_for(target)
    assert plan.kernel == "k<float, 4>" and [b.sizes for b in plan.builds] == [(("NI", 2048),), (("NI", 97),)]
    built = plan.compile(target.text, "sm_90")
    assert [b.symbol for b in built.sized] == ["_Z1kIfLi4EEvPT_"] * 2 and built.at(0).cubin != built.at(1).cubin


def test_the_float64_twin_runs_its_own_build_at_each_size_set(sized_client: WorkerClient,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    ev = KernelEvaluator(SAMPLES / "saxpy.cu", saxpy_bound(), sized_client, arch="sm_90",
                         timing=TimingOptions(min_runs=3, min_ms=0.0, max_s=0.5), macro_sizes=frozenset({"n"}))
    twins = ev.plan.combine([fake("t.n1000.cubin"), fake("t.n97.cubin")])
    monkeypatch.setattr("cuopt.evaluate.evaluator.compile_shadow", lambda *a, **k: (twins, ""))
    try:
        builds = ev.plan.combine([fake("v.n1000.cubin"), fake("v.n97.cubin")])
        assert ev.set_reference(builds, ev.spec.launch, "source").ok
        assert ev.reference.kind == "float64", ev.reference.reason
        assert set(ev.reference.original) == {"timing", "check 1"}
    finally:
        ev.close()


SHADOWED = """\
// {tag}
#include "types.h"
#ifndef NI
#define NI 2048
#endif
__global__ void k(DATA_TYPE* p) {{ p[threadIdx.x] = SCALE * NI; }}
"""


@requires_nvcc
def test_the_float64_twin_is_built_with_the_original_s_settings_and_size_sets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cuopt.evaluate import evaluator
    from cuopt.targets import collect

    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "types.h").write_text("#pragma once\ntypedef float DATA_TYPE;\n")
    cu = tmp_path / "k.cu"
    cu.write_text(SHADOWED.format(tag=uuid.uuid4()))
    (tmp_path / "k.cuopt.toml").write_text('[compile]\ninclude = ["inc"]\ndefine = ["SCALE=2.0f"]\n'
                                           '[k]\nblock = [32]\ngrid = ["1"]\nsizes = { NI = 2048 }\n'
                                           'check_sizes = [{ NI = 97 }]\n[k.args]\np = "out float32[NI]"\n')
    [target] = collect([cu])
    built: list[tuple[Compiled | None, str]] = []
    real = evaluator.compile_shadow

    def record(*args, **kwargs):
        built.append(real(*args, **kwargs))
        return None, "recorded"

    monkeypatch.setattr("cuopt.evaluate.evaluator.compile_shadow", record)
    client = WorkerClient("tests.evaluate.fake_backend:FakeBackend", timeout_s=1.0)
    ev = KernelEvaluator.for_target(target, client, arch="sm_90")
    try:  # the fake backend cannot run kernel k: only the twin's build matters here
        ev.set_reference(ev.compile(Variant(target.text, target.spec.launch)), target.spec.launch, target.text)
    finally:
        ev.close()
        client.close()
    [(twin, why)] = built
    assert twin is not None, why
    assert [b.symbol for b in twin.sized] == ["_Z1kPd"] * 2 and twin.at(0).cubin != twin.at(1).cubin
