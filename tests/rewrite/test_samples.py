"""For every sample: every applicable rewrite alone, and every pair applied in sequence, reparses
without errors, keeps the kernel's signature, and compiles with nvcc (sm_90).

The variants of a sample are compiled as one translation unit, each in a namespace of its own,
so the test runs in seconds rather than one nvcc start per variant; without optimization
(`-Xcicc -O0 -Xptxas -O0`): every front-end and ptxas error still shows, at a sixth of the time."""
from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cuopt.compile_settings import CompileSettings
from cuopt.lint.nvcc import compile_file
from cuopt.evaluate.compile import find_nvcc
from cuopt.rewrite.context import Context
from cuopt.rewrite.engine import Engine
from cuopt.source.kernels import load
from cuopt.targets import collect
from tests.conftest import SAMPLES, requires_nvcc, sample_names

ENGINE = Engine.default()
UNOPTIMIZED = CompileSettings(flags=("-Xcicc", "-O0", "-Xptxas", "-O0"))
OPT_INS = frozenset(o for r in ENGINE.rules.values() for o in r.requires)  # opt-in rules are tested too


@functools.lru_cache(maxsize=None)
def variants(name: str) -> list[tuple[str, bytes]]:
    target = collect([SAMPLES / f"{name}.cu"])[0]
    spec, kernel = target.spec, target.kernel.name
    root = Context(target.source.source, spec.launch, kernel, spec, OPT_INS)
    out = []
    for first in ENGINE.offers(root):
        out.append((first.action.id, first.result.source))
        after = Context(first.result.source, first.result.launch, kernel, spec, OPT_INS)
        for second in ENGINE.offers(after):
            out.append((f"{first.action.id} + {second.action.id}", second.result.source))
    return out


@pytest.mark.parametrize("name", sample_names())
def test_rewrites_reparse_and_keep_the_signature(name: str) -> None:
    original = load((SAMPLES / f"{name}.cu").read_bytes()).kernel(name)
    assert original is not None
    found = variants(name)
    assert found, f"no rewrite applies to {name}"
    for label, source in found:
        parsed = load(source)
        kernel = parsed.kernel(name)
        assert kernel is not None and not kernel.errors, f"{label}: {kernel.errors if kernel else 'kernel lost'}"
        assert kernel.signature == original.signature, label


@requires_nvcc
@pytest.mark.parametrize("name", sample_names())
def test_rewrites_compile(name: str, tmp_path: Path) -> None:
    nvcc = find_nvcc()
    assert nvcc is not None
    found = variants(name)
    parts = max(1, min(os.cpu_count() or 1, len(found) // 50))
    units = []
    for p in range(parts):
        chunks, owners, line = [], [], 1
        for i, (label, source) in list(enumerate(found))[p::parts]:
            text = f"namespace cuopt_variant_{i} {{\n{source.decode()}\n}}\n"
            chunks.append(text)
            owners.append((line, line + text.count("\n"), label))
            line += text.count("\n")
        unit = tmp_path / f"{name}_variants_{p}.cu"
        unit.write_text("".join(chunks))
        units.append((unit, owners))
    with ThreadPoolExecutor(max_workers=parts) as pool:
        results = list(pool.map(lambda u: compile_file(nvcc, u[0], "sm_90", UNOPTIMIZED), units))
    described = []
    for (unit, owners), errors in zip(units, results):
        for e in errors:
            label = next((lbl for lo, hi, lbl in owners if e.line is not None and lo <= e.line < hi), "?")
            described.append(f"{label}: line {e.line}: {e.message}")
    assert not described, "\n".join(described)
