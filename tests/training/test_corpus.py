"""The training corpus: deterministic, every kernel parses, binds its spec and compiles, the split
depends on the name alone, and the rewrite rules find work on nearly every kernel."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cuopt.errors import CuoptError
from cuopt.evaluate.compile import find_nvcc
from cuopt.training.corpus import MANIFEST, families_from, generate, spelled, split_of, write
from cuopt.training.families import FAMILIES
from cuopt.lint.nvcc import compile_file
from cuopt.rewrite.context import Context
from cuopt.rewrite.engine import Engine
from cuopt.spec.bind import BufferValue
from cuopt.targets import collect
from tests.conftest import requires_nvcc

COUNT = 60  # five turns of every family


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus")
    write(generate(COUNT, seed=0), out, seed=0)
    return out


def manifest(corpus: Path) -> dict:
    return json.loads((corpus / MANIFEST).read_text())


def test_same_seed_and_count_give_identical_files(corpus: Path, tmp_path: Path) -> None:
    write(generate(COUNT, seed=0), tmp_path, seed=0)
    names = sorted(p.name for p in corpus.iterdir())
    assert names == sorted(p.name for p in tmp_path.iterdir())
    assert len(names) == 2 * COUNT + 1
    for name in names:
        assert (corpus / name).read_bytes() == (tmp_path / name).read_bytes(), name


def test_a_kernel_depends_on_the_seed_and_its_name_only() -> None:
    small, large = generate(24, seed=0), generate(COUNT, seed=0)
    assert large[:24] == small
    only = generate(5, seed=0, families=["matmul"])
    assert only == [k for k in large if k.family == "matmul"][:5]
    other = generate(24, seed=1)
    assert [k.name for k in other] == [k.name for k in small]
    assert sum(a.source != b.source for a, b in zip(other, small, strict=True)) >= 20


def test_names_are_unique_and_every_family_is_present(corpus: Path) -> None:
    m = manifest(corpus)
    assert (m["seed"], m["count"]) == (0, COUNT)
    names = [k["name"] for k in m["kernels"]]
    assert len(set(names)) == COUNT
    assert {k["family"] for k in m["kernels"]} == set(FAMILIES)
    for k in m["kernels"]:
        assert re.fullmatch(rf"{k['family']}_\d{{3}}", k["name"])
        assert k["file"] == f"{k['name']}.cu" and (corpus / k["file"]).is_file()


def test_every_kernel_parses_and_its_spec_binds(corpus: Path) -> None:
    targets = collect([corpus])  # raises on a syntax error or a spec that does not match the kernel
    assert sorted(t.kernel.name for t in targets) == sorted(k["name"] for k in manifest(corpus)["kernels"])
    for t in targets:
        assert not t.source.errors, t.kernel.name
        instances = t.bound.instances()  # the timing sizes and the derived odd check sizes
        assert len(instances) >= 2, t.kernel.name
        assert all(a.count > 0 for i in instances for a in i.args if isinstance(a, BufferValue)), t.kernel.name


def test_the_split_depends_on_the_name_alone(corpus: Path) -> None:
    kernels = manifest(corpus)["kernels"]
    assert all(k["split"] == split_of(k["name"]) for k in kernels)
    assert 4 <= sum(k["split"] == "heldout" for k in kernels) <= 16
    names = [f"{f}_{i:03d}" for f in FAMILIES for i in range(1000)]
    held = sum(split_of(n) == "heldout" for n in names) / len(names)
    assert 0.15 < held < 0.19
    assert {split_of(n) for n in names} == {"train", "heldout"}


def test_families_are_chosen_by_name() -> None:
    assert families_from(None) == list(FAMILIES)
    assert families_from(" stencil,matmul ") == ["stencil", "matmul"]
    assert {k.family for k in generate(10, families=["stencil", "histogram"])} == {"stencil", "histogram"}
    with pytest.raises(CuoptError, match="unknown kernel family 'gemm'"):
        families_from("matmul,gemm")


def _compiles(sources: dict[str, str], tmp_path: Path) -> None:
    """All kernels in one translation unit (one nvcc call), each in a namespace of its own; its
    macros are undefined after it."""
    nvcc = find_nvcc()
    assert nvcc is not None
    unit = tmp_path / "corpus.cu"
    text = "".join(f"namespace corpus_{name} {{\n{source}}}\n"
                   + "".join(f"#undef {m}\n" for m in re.findall(r"^#define (\w+)", source, re.M))
                   for name, source in sorted(sources.items()))
    unit.write_text(text)
    lines = text.splitlines()

    def kernel_at(line: int | None) -> str:
        return next((ln.split()[1] for ln in reversed(lines[:line or 0]) if ln.startswith("namespace ")), "?")

    errors = compile_file(nvcc, unit, "sm_90")
    assert not errors, "\n".join(f"{kernel_at(e.line)}: {e.message}" for e in errors)


@requires_nvcc
def test_every_kernel_compiles(corpus: Path, tmp_path: Path) -> None:
    _compiles({f.stem: f.read_text() for f in corpus.glob("*.cu")}, tmp_path)


@requires_nvcc
def test_every_spelled_kernel_compiles(tmp_path: Path) -> None:
    kernels = [k for k in spelled(generate(COUNT, seed=0)) if k.base]
    assert len(kernels) > 3 * COUNT
    _compiles({k.name: k.source for k in kernels}, tmp_path)


def test_most_kernels_get_a_rewrite_offer(corpus: Path) -> None:
    engine = Engine.default()
    targets = collect([corpus])
    offered = [t.kernel.name for t in targets
               if engine.offers(Context(t.source.source, t.spec.launch, t.kernel.name, t.spec))]
    assert len(offered) >= 0.8 * len(targets), sorted({t.kernel.name for t in targets} - set(offered))


def test_spelled_kernels_share_their_base_kernels_split_and_bind(tmp_path: Path) -> None:
    base = generate(12, seed=0)
    kernels = spelled(base)
    write(kernels, tmp_path, seed=0)
    by_name = {k.name: k for k in kernels}
    extra = [k for k in kernels if k.base]
    assert len(extra) > len(base) and {k.base for k in extra} == {k.name for k in base}
    assert all(k.split == by_name[k.base].split and k.family == by_name[k.base].family for k in extra)
    assert {k.name for k in extra if k.name.endswith("_s_older_benchmark")} >= {"matmul_000_s_older_benchmark"}
    listed = {k["name"]: k for k in manifest(tmp_path)["kernels"]}
    assert all(listed[k.name]["spells"] == k.base and listed[k.name]["split"] == k.split for k in extra)
    targets = collect([tmp_path])  # every spelled kernel parses and its spec binds (macro sizes included)
    assert sorted(t.kernel.name for t in targets) == sorted(by_name)
    for t in targets:
        assert not t.source.errors and len(t.bound.instances()) >= 2, t.kernel.name
