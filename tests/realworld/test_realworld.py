"""Programs written the ways real projects write CUDA (host code and error macros, several kernels
per file, macros and headers, templates with functors, generated code, older C spellings, 3D
stencils, half precision): `cuopt init` writes a spec that `cuopt check` passes, unedited, and
each kernel is offered at least the rules tests/realworld/expected.toml lists for it."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuopt.cli import app
from cuopt.compile_settings import CompileSettings
from cuopt.evaluate.compile import CompileError, compile_many
from cuopt.rewrite.engine import Engine
from cuopt.targets import rewrite_contexts
from tests.conftest import requires_nvcc

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HERE = Path(__file__).parent
EXPECTED: dict[str, dict[str, list[str]]] = tomllib.loads((HERE / "expected.toml").read_text())
ENGINE = Engine.default()


def test_every_program_has_expectations() -> None:
    assert sorted(p.name for p in HERE.glob("*.cu")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_init_writes_a_spec_that_checks_and_the_rules_apply(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    shutil.copy(HERE / name, path)
    runner = CliRunner()
    result = runner.invoke(app, ["init", str(path)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["check", "--no-compile", str(path)])
    assert result.exit_code == 0 and " 0 errors" in result.output, result.output
    offered = {ctx.kernel_name: {o.action.rule for o in ENGINE.offers(ctx)}
               for ctx in rewrite_contexts(path, None, frozenset(), [])}
    assert set(offered) == set(EXPECTED[name])  # every kernel the spec describes, and no other
    missing = {k: sorted(set(rules) - offered[k]) for k, rules in EXPECTED[name].items() if set(rules) - offered[k]}
    assert not missing, f"rules no longer offered: {missing}"


ONCE_A_FILE = frozenset({"restrict-const", "block-size"})
UNOPTIMIZED = CompileSettings(flags=("-Xcicc", "-O0", "-Xptxas", "-O0"))  # as tests/rewrite/test_samples.py


@requires_nvcc
def test_every_rule_offered_writes_code_that_compiles(tmp_path: Path) -> None:
    """One variant of every (kernel, rule) offered on the corpus, compiled with nvcc: a rewrite of
    real code must still be code (the GPU tests validate what it computes). `restrict-const`
    (qualifiers and `__ldg` loads) and `block-size` (the launch) are compiled once a file
    (ONCE_A_FILE): their edits take the same form on every kernel, and nvcc time is much of the
    CPU suite's; without optimization (UNOPTIMIZED), which still shows every front-end and ptxas
    error, at three quarters of the time."""
    jobs, labels = [], []
    runner = CliRunner()
    for name in sorted(EXPECTED):
        path = tmp_path / name
        shutil.copy(HERE / name, path)
        assert runner.invoke(app, ["init", str(path)]).exit_code == 0
        done: set[str] = set()
        for ctx in rewrite_contexts(path, None, frozenset(), []):
            first: dict[str, object] = {}
            for offer in ENGINE.offers(ctx):
                first.setdefault(offer.action.rule, offer)
            for rule, offer in sorted(first.items()):
                if rule in done:
                    continue
                done |= {rule} & ONCE_A_FILE
                jobs.append((offer.result.source.decode(), ctx.kernel.entry, ctx.settings.merged(UNOPTIMIZED)))
                labels.append(f"{name}:{ctx.kernel_name}:{offer.action.id}")
    failed = [f"{label}: {r}" for label, r in zip(labels, compile_many(jobs)) if isinstance(r, CompileError)]
    assert jobs and not failed, "\n".join(failed)


def test_token_ids_are_drawn_within_the_rows_they_pick(tmp_path: Path) -> None:
    """Language-model training code's spelling: a token id picks a row of the embedding table
    (`tok_table + id * C`), a label picks an element of a row put together from `seq = n / T` and
    `pos = n % T`; init draws both in range."""
    path = tmp_path / "llmc_bt.cu"
    shutil.copy(HERE / "llmc_bt.cu", path)
    assert CliRunner().invoke(app, ["init", str(path)]).exit_code == 0
    spec = path.with_name("llmc_bt.cuopt.toml").read_text()
    assert 'tokens = "in int32[B * T] randint(0, 50257)"\n' in spec
    assert 'labels = "in int32[B * T] randint(0, V)"\n' in spec
