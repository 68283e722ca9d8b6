"""The kernels each rule runs on beyond its snippets, as its folder declares them in
rules/<id>/cases.toml: emulated on the CPU (test_emulated_rules.py) and validated on a GPU
(test_gpu_rule_cases.py). One table a case:

    [gemm_ld]
    kernel = "cases/gemm_ld.cu"          # relative to the rule's folder; its .cuopt.toml beside it
    first = ["smem-tile@11:9/tile=32"]   # rewrites applied before, in order (optional)
    spelling = "row-pointer"             # the kernel written in that spelling first (optional)
    gpu = true                           # every rewrite of the rule validated on a GPU
    emulate = [{ M = 130, N = 67, K = 37 }]   # size sets of a CPU run
    emulate_variants = [{ stages = 2 }]  # the CPU runs only the variants with these parameters
"""
from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuopt.resources import data_dir
from cuopt.rewrite.rule import rule_folders
from cuopt.training.spellings import SPELLINGS
from tests.helpers import cuopt

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CASES_FILE = "cases.toml"
KEYS = {"kernel", "first", "spelling", "gpu", "emulate", "emulate_variants"}


@dataclass(frozen=True)
class RuleCase:
    rule: str
    name: str
    kernel: Path
    first: tuple[str, ...] = ()
    spelling: str | None = None
    gpu: bool = False
    emulate: tuple[dict[str, int], ...] = ()
    emulate_variants: tuple[dict[str, Any], ...] = ()

    @property
    def id(self) -> str:
        return f"{self.rule}:{self.name}"

    def emulates(self, params: dict[str, Any]) -> bool:
        """Whether the CPU run takes the variant of these parameters."""
        return not self.emulate_variants or any(
            all(params.get(k) == v for k, v in wanted.items()) for wanted in self.emulate_variants)

    def prepare(self, work: Path) -> Path:
        """The case's kernel and spec in `work`, spelled and rewritten as declared; the kernel's path."""
        path = work / self.kernel.name
        if self.first:
            steps = [arg for action in self.first for arg in ("-a", action)]
            result = cuopt("rewrites", str(self.kernel), *steps, "-o", str(path))
            assert result.exit_code == 0, result.output
            return path
        for suffix in (".cu", ".cuopt.toml"):
            shutil.copy(self.kernel.with_suffix(suffix), work)
        if self.spelling:
            text = SPELLINGS[self.spelling](path.read_text())
            assert text is not None, f"{self.spelling} does not apply to {self.kernel.name}"
            path.write_text(text)
        return path


def load_cases(folder: Path) -> list[RuleCase]:
    """The cases rules/<id>/cases.toml declares (none without the file); a mistake fails loudly."""
    path = folder / CASES_FILE
    if not path.is_file():
        return []
    out = []
    for name, raw in tomllib.loads(path.read_text()).items():
        where = f"{folder.name}/{CASES_FILE}: [{name}]"
        assert not set(raw) - KEYS, f"{where}: unknown key {sorted(set(raw) - KEYS)[0]!r}"
        kernel = (folder / raw["kernel"]).resolve()
        assert kernel.is_file() and kernel.with_suffix(".cuopt.toml").is_file(), f"{where}: no {raw['kernel']} and spec"
        assert raw.get("gpu") or raw.get("emulate"), f"{where}: runs nowhere (gpu = true or emulate sizes)"
        out.append(RuleCase(folder.name, name, kernel, tuple(raw.get("first", ())), raw.get("spelling"),
                            bool(raw.get("gpu")), tuple(raw.get("emulate", ())),
                            tuple(raw.get("emulate_variants", ()))))
    return out


def rule_cases() -> list[RuleCase]:
    """Every rule folder's cases."""
    return [case for folder in rule_folders(data_dir("rules")) for case in load_cases(folder)]
