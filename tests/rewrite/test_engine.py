"""The engine's check of every rewrite: parses, same signature, nothing outside the kernel touched."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.rewrite.context import Context, RewriteError, Rewritten
from cuopt.rewrite.engine import verify
from cuopt.rewrite.rule import Rule
from cuopt.spec import expr as E
from cuopt.spec.model import Launch
from tests.conftest import ROOT

SOURCE = b"""#define SCALE 2
__global__ void k(int n, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= SCALE;
}
int host_value = 1;
"""
LAUNCH = Launch((256,), (E.parse("cdiv(n, block.x)"),))
RULE = Rule("test-rule", "test", "test", "none", Path("test.toml"))


def check(source: bytes) -> None:
    verify(Context(SOURCE, LAUNCH, "k"), Rewritten(source, LAUNCH, "test"), RULE)


def test_a_rewrite_inside_the_kernel_passes() -> None:
    check(SOURCE.replace(b"y[i] *= SCALE;", b"{ y[i] = y[i] * SCALE; }"))


@pytest.mark.parametrize("before, after", [(b"#define SCALE 2", b"#define SCALE 3"),
                                           (b"int host_value = 1;", b"int host_value = 2;"),
                                           (b"int host_value = 1;\n", b"int host_value = 1;\n\n")])
def test_a_rewrite_that_touches_code_outside_the_kernel_is_refused(before: bytes, after: bytes) -> None:
    with pytest.raises(RewriteError, match="rule test-rule changed code outside kernel k"):
        check(SOURCE.replace(b"y[i] *= SCALE;", b"y[i] = y[i] * SCALE;").replace(before, after))


def test_a_rewrite_that_changes_the_signature_is_refused() -> None:
    with pytest.raises(RewriteError, match="rule test-rule changed the signature of k"):
        check(SOURCE.replace(b"float* y", b"double* y"))


TIED = b"""#define TILE 16
__global__ void scale(const float* x, float* y, int n)
{
    int i = blockIdx.x * TILE + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
"""


def _offers(block: int, grid: str) -> tuple[set[str], list]:
    from cuopt.rewrite.engine import Engine
    from cuopt.source.preprocess import macros_of
    from cuopt.spec.model import parse

    spec = parse({"scale": {"block": [block], "grid": [grid], "sizes": {"n": 4096, "TILE": 16},
                            "args": {"x": "in float32[n]", "y": "out float32[n]", "n": "n"}}},
                 Path("k.cuopt.toml")).kernels["scale"]
    ctx = Context(TIED, spec.launch, "scale", spec, frozenset(), macros_of(TIED, Path("k.cu")))
    refusals: list = []
    offers = Engine.default().offers(ctx, refusals=refusals)
    return {o.action.rule for o in offers}, refusals


@pytest.mark.parametrize("grid", ["cdiv(n, TILE)", "cdiv(n, block.x)"])
def test_a_block_size_written_as_a_macro_is_the_block_where_the_launch_agrees(grid: str) -> None:
    rules, refusals = _offers(16, grid)
    assert {"vectorize", "grid-stride", "coarsen"} <= rules  # the index reads as blockIdx.x * blockDim.x + threadIdx.x
    assert "block-size" not in rules  # the kernel still takes TILE for blockDim.x
    if grid == "cdiv(n, block.x)":
        assert any(r.rule == "block-size" and "takes TILE for blockDim.x" in r.reason for r in refusals)


def test_a_block_size_macro_the_launch_does_not_follow_refuses_every_rule() -> None:
    rules, refusals = _offers(256, "cdiv(n, block.x)")
    assert not rules
    assert any("takes TILE = 16 for blockDim.x, but the launch's block is 256" in r.reason for r in refusals)


def test_a_kernel_that_parses_only_with_its_branches_taken_is_read_but_not_rewritten() -> None:
    from cuopt.rewrite.engine import Engine

    source = (b"__global__ void k(int n, float* y)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
              b"#ifdef EARLY_EXIT\n    if (i >= n) return;\n#else\n    if (i < n)\n#endif\n    { y[i] *= 2.0f; }\n}\n")
    ctx = Context(source, LAUNCH, "k")
    assert ctx.model.global_accesses("y")  # the analysis reads the branches the compiler takes
    refusals: list = []
    assert not Engine.default().offers(ctx, refusals=refusals)
    assert all("parses only as the preprocessor leaves it" in r.reason for r in refusals)


@pytest.mark.parametrize("where", ["sites", "apply"])
def test_a_transform_that_crashes_loses_its_rule_not_the_others(monkeypatch, where: str) -> None:
    from cuopt.rewrite import engine as engine_module
    from cuopt.rewrite.engine import CRASHED, Engine

    real = engine_module.TRANSFORMS["vectorize"]

    class Broken:
        def sites(self, ctx, rule):
            if where == "sites":
                raise IndexError("list index out of range")
            return real.sites(ctx, rule)

        def apply(self, ctx, rule, site, params):
            raise KeyError("lane")

        def __getattr__(self, name):
            return getattr(real, name)

    monkeypatch.setitem(engine_module.TRANSFORMS, "vectorize", Broken())
    source = b"__global__ void k(const float* x, float* y, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = 2.0f * x[i];\n}\n"
    refusals: list = []
    offers = Engine.default().offers(Context(source, LAUNCH, "k"), refusals=refusals)
    assert "vectorize" not in {o.action.rule for o in offers}
    assert {"grid-stride", "coarsen"} <= {o.action.rule for o in offers}
    crashed = [r for r in refusals if r.rule == "vectorize" and CRASHED in r.reason]
    assert crashed and ("IndexError" if where == "sites" else "KeyError") in crashed[0].reason


ROWS = b"""__global__ void softmax(float* out, const float* inp, int N, int C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        const float* inp_row = inp + i * C;
        float* out_row = out + i * C;

        float maxval = -INFINITY;
        for (int j = 0; j < C; j++) {
            maxval = fmaxf(maxval, inp_row[j]);
        }
        float sum = 0.0f;
        for (int j = 0; j < C; j++) {
            out_row[j] = expf(inp_row[j] - maxval);
            sum += out_row[j];
        }
        for (int j = 0; j < C; j++) {
            out_row[j] /= sum;
        }
    }
}
"""


def test_lines_in_offers_and_refusals_are_the_files_not_the_normal_forms() -> None:
    from cuopt.rewrite.engine import Engine, normalize

    ctx = Context(ROWS, LAUNCH, "softmax")
    assert normalize(ctx).source.count(b"\n") < ROWS.count(b"\n")  # the row pointers go with their lines
    loops = [n + 1 for n, line in enumerate(ROWS.splitlines()) if line.lstrip().startswith(b"for")]
    refusals: list = []
    offers = Engine.default().offers(ctx, refusals=refusals)
    assert {o.action.line for o in offers if o.action.rule in ("unroll", "vectorize")} == set(loops)
    assert all(f"line {o.action.line}" in o.result.summary for o in offers if o.action.rule == "unroll")
    row = next(o for o in offers if o.action.rule == "row-parallel")
    assert row.note.startswith("each thread loops over a whole row") and f"(line {loops[0]}, {loops[1]}, {loops[2]})" in row.note
    assert any(r.reason == f"the loop at line {loops[0]} has no constant trip count" for r in refusals)


def test_a_line_map_names_the_first_line_of_what_the_normal_form_replaced() -> None:
    from cuopt.rewrite.engine import LineMap

    lines = LineMap(10, (("equal", 0, 3, 0, 3), ("replace", 3, 6, 3, 4), ("equal", 6, 9, 4, 7)), 2, True)
    assert [lines.line(n) for n in (5, 12, 13, 14, 16, 17, 30)] == [5, 12, 13, 16, 18, 19, 32]
    assert lines.text("the loops at lines 13, 14 and 16 (line 12); block 128 at line 5") == \
        "the loops at lines 13, 16 and 18 (line 12); block 128 at line 5"


def test_a_tile_row_kernel_is_rewritten_from_its_normal_form_and_says_so() -> None:
    """The SDK-style naive transpose reads as one tile row a thread under a 32x32 block: every rewrite
    is of that normal form (never re-applied to the loop as written, which the rule did not read),
    states its launch, and says in its summary what the normal form did."""
    from cuopt.rewrite.engine import Engine
    from cuopt.targets import rewrite_contexts

    (ctx,) = rewrite_contexts(ROOT / "rules" / "smem-tile" / "cases" / "transpose_naive.cu")
    offers = {o.action.id: o for o in Engine.default().offers(ctx)}
    tiled = offers["smem-tile@10:5/tile=32"]
    assert tiled.result.launch == ctx.launch and not tiled.changes_launch
    assert "__shared__" in tiled.result.source.decode() and "r += BLOCK_ROWS" not in tiled.result.source.decode()
    plain = offers["restrict-const@7:1"]
    assert plain.result.launch.block == (32, 32) and plain.changes_launch
    assert "r += BLOCK_ROWS" not in plain.result.source.decode()
    assert all(o.result.summary.startswith("read as one tile row a thread (the 32x8 block's row loop, as 32x32)")
               for o in offers.values())


REPEATED = b"""__global__ void rowdot(const float* m, const float* v, float* y, int n)
{
    int tid = threadIdx.x;
    int r = blockIdx.x * blockDim.x + tid;
    if (r < n) {
        float s = 0.0f;
        for (int c = 0; c < n; ++c) s += m[r * n + c] * v[c];
        y[r] = s;
    }
}
"""


def test_launch_changing_rules_read_a_kernel_without_the_threads_that_repeat_its_work() -> None:
    """A 32x8 block over a kernel that reads no y built-in: the rules that change the launch read it
    as block 32, each rewrite drops the y copies and says so, the kernel keeps its spelling where the
    rule reads it as written too; the rules that keep the launch keep it, and so does --keep-launch."""
    from cuopt.rewrite.engine import Engine

    ctx = Context(REPEATED, Launch((32, 8), (E.parse("cdiv(n, block.x)"),)), "rowdot")
    offers = {o.action.id: o for o in Engine.default().offers(ctx)}
    sized = offers["block-size@1:1/block=256"]
    assert sized.result.launch == Launch((256,), (E.parse("cdiv(n, block.x)"),)) and sized.changes_launch
    assert sized.result.summary.startswith("block 32x8 as 32: the y copies repeat each other's work")
    assert b"int tid = threadIdx.x;" in sized.result.source  # rewritten as written
    assert offers["grid-stride@1:1/per_thread=4"].result.launch.block == (32,)
    assert offers["row-parallel@1:1/unit=warp,block=128"].result.launch.block == (128,)
    unrolled = offers["unroll@7:9/factor=4"]
    assert unrolled.result.launch == ctx.launch and not unrolled.changes_launch
    kept = Engine.default().offers(ctx, keep_launch=True)
    assert kept and all(o.result.launch == ctx.launch for o in kept)
    assert not any(o.action.rule in ("row-parallel", "grid-stride") for o in kept)


WIDE = b"""__global__ void rowsum(const float* x, float* y, int rows, int C)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    if (C > 1024) {
        for (int c = 0; c < C; ++c) s += x[r * C + c];
    } else {
        for (int c = 0; c < C; c += 2) s += x[r * C + c] + (c + 1 < C ? x[r * C + c + 1] : 0.0f);
    }
    y[r] = s;
}
"""


@pytest.mark.parametrize("check_c", [100, 2000])
def test_code_that_runs_at_none_of_the_specs_sizes_is_offered_no_rewrite(check_c: int) -> None:
    """A rewrite of code no size set runs (the `C > 1024` branch at C = 768 and 100) cannot be
    validated or timed: its sites are refused, saying so; a check size that runs it brings them back."""
    from cuopt.rewrite.engine import Engine
    from cuopt.spec.model import parse

    spec = parse({"rowsum": {"block": [128], "grid": ["cdiv(rows, block.x)"], "sizes": {"rows": 512, "C": 768},
                             "check_sizes": [{"rows": 33, "C": check_c}],
                             "args": {"x": "in float32[rows*C]", "y": "out float32[rows]", "rows": "rows", "C": "C"}}},
                 Path("k.cuopt.toml")).kernels["rowsum"]
    refusals: list = []
    offers = Engine.default().offers(Context(WIDE, spec.launch, "rowsum", spec), refusals=refusals)
    lines = {o.action.line for o in offers if o.action.rule == "unroll"}
    cold = [r for r in refusals if "at none of the spec's sizes" in r.reason]
    if check_c == 100:
        assert lines == {9} and {r.line for r in cold} >= {7}
        assert "runs only where `C > 1024` is true" in cold[0].reason
    else:
        assert lines == {7, 9} and not cold
