"""Programs written the ways real projects write CUDA (host code and error macros, several kernels
per file, macros and headers, templates with functors, generated code, older C spellings, 3D
stencils, half precision): `cuopt init` writes a spec that `cuopt check` passes, unedited, and
each kernel is offered at least the rules tests/realworld/expected.toml lists for it."""
from __future__ import annotations

import functools
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from cuopt.cli import app
from cuopt.compile_settings import CompileSettings
from cuopt.evaluate.compile import CompileError, compile_many
from cuopt.rewrite.context import Context
from cuopt.rewrite.engine import Engine, Offer
from cuopt.targets import rewrite_contexts
from tests.conftest import requires_nvcc

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HERE = Path(__file__).parent
EXPECTED: dict[str, dict[str, list[str]]] = tomllib.loads((HERE / "expected.toml").read_text())
ENGINE = Engine.default()


@dataclass(frozen=True)
class Program:
    """A copy of one program after `cuopt init`, with the offers on each kernel its spec describes."""

    path: Path
    init: Result
    offers: list[tuple[Context, list[Offer]]]


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Program]:
    """Each program initialized and offered rewrites once for the module's tests (on first use)."""
    root = tmp_path_factory.mktemp("realworld")

    @functools.cache
    def initialized(name: str) -> Program:
        path = root / name
        shutil.copy(HERE / name, path)
        init = CliRunner().invoke(app, ["init", str(path)])
        contexts = rewrite_contexts(path, None, frozenset(), []) if init.exit_code == 0 else []
        return Program(path, init, [(ctx, ENGINE.offers(ctx)) for ctx in contexts])

    return initialized


def test_every_program_has_expectations() -> None:
    assert sorted(p.name for p in HERE.glob("*.cu")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_init_writes_a_spec_that_checks_and_the_rules_apply(program: Callable[[str], Program], name: str) -> None:
    initialized = program(name)
    assert initialized.init.exit_code == 0, initialized.init.output
    result = CliRunner().invoke(app, ["check", "--no-compile", str(initialized.path)])
    assert result.exit_code == 0 and " 0 errors" in result.output, result.output
    offered = {ctx.kernel_name: {o.action.rule for o in offers} for ctx, offers in initialized.offers}
    assert set(offered) == set(EXPECTED[name])  # every kernel the spec describes, and no other
    missing = {k: sorted(set(rules) - offered[k]) for k, rules in EXPECTED[name].items() if set(rules) - offered[k]}
    assert not missing, f"rules no longer offered: {missing}"


ONCE_A_FILE = frozenset({"restrict-const", "block-size"})
UNOPTIMIZED = CompileSettings(flags=("-Xcicc", "-O0", "-Xptxas", "-O0"))  # as tests/rewrite/test_samples.py


@requires_nvcc
def test_every_rule_offered_writes_code_that_compiles(program: Callable[[str], Program]) -> None:
    """One variant of every (kernel, rule) offered on the corpus, compiled with nvcc: a rewrite of
    real code must still be code (the GPU tests validate what it computes). `restrict-const`
    (qualifiers and `__ldg` loads) and `block-size` (the launch) are compiled once a file
    (ONCE_A_FILE): their edits take the same form on every kernel, and nvcc time is much of the
    CPU suite's; without optimization (UNOPTIMIZED), which still shows every front-end and ptxas
    error, at three quarters of the time."""
    jobs, labels = [], []
    for name in sorted(EXPECTED):
        initialized = program(name)
        assert initialized.init.exit_code == 0
        done: set[str] = set()
        for ctx, offers in initialized.offers:
            first: dict[str, Offer] = {}
            for offer in offers:
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
