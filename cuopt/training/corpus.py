"""The training corpus of the learned policy: naive CUDA kernels with their specs from a seeded
generator (families in `cuopt.training.families`), a fixed train / held-out split by name, and a
manifest. Kernel `<family>_<nnn>` depends only on the seed and its name, so a larger corpus
starts with the kernels of a smaller one and no kernel ever changes split."""
from __future__ import annotations

import hashlib
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuopt import ui
from cuopt.errors import CuoptError
from cuopt.spec.model import spec_path_for
from cuopt.targets import collect
from cuopt.training.families import FAMILIES, Kernel
from cuopt.training.spellings import spellings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SCHEDULE = ("elementwise", "reduction", "stencil", "matmul", "elementwise", "reduction",
            "transpose", "elementwise", "stencil", "reduction", "matmul", "histogram")
"""Which family the i-th kernel comes from (cyclically): elementwise and reductions are the most varied."""
HELDOUT_ONE_IN = 6
MANIFEST = "manifest.json"
SPLITS = ("train", "heldout", "all")  # what the training commands may select


@dataclass(frozen=True)
class CorpusKernel:
    name: str
    family: str
    source: str  # the .cu file
    spec: str  # the .cuopt.toml file
    base: str = ""  # for a spelled kernel, the kernel it spells: it shares that kernel's split

    @property
    def split(self) -> str:
        return split_of(self.base or self.name)


def split_of(name: str) -> str:
    """`heldout` for about one name in six, `train` otherwise: a hash of the name alone."""
    digest = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big")
    return "heldout" if digest % HELDOUT_ONE_IN == 0 else "train"


def families_from(text: str | None) -> list[str]:
    """`a,b` -> the named families, in their usual order; None -> all."""
    if text is None:
        return list(FAMILIES)
    names = [f.strip() for f in text.split(",") if f.strip()]
    for f in names:
        if f not in FAMILIES:
            raise CuoptError(f"unknown kernel family {f!r}; families: {', '.join(FAMILIES)}")
    if not names:
        raise CuoptError(f"no kernel family named; families: {', '.join(FAMILIES)}")
    return [f for f in FAMILIES if f in names]


def generate(count: int, seed: int = 0, families: Sequence[str] | None = None) -> list[CorpusKernel]:
    """`count` kernels, the families taking turns as in SCHEDULE."""
    schedule = [f for f in SCHEDULE if families is None or f in families]
    numbers: Counter[str] = Counter()
    out = []
    for i in range(count):
        family = schedule[i % len(schedule)]
        name = f"{family}_{numbers[family]:03d}"
        numbers[family] += 1
        rng = random.Random(f"{seed}/{name}")
        source, spec = FAMILIES[family](rng, Kernel(name, restrict=rng.random() < 0.2))
        out.append(CorpusKernel(name, family, source, spec))
    return out


def spelled(kernels: list[CorpusKernel]) -> list[CorpusKernel]:
    """Each kernel followed by its spellings (cuopt.training.spellings) that apply: kernel
    `<name>_s_<spelling>`, the same family, spec and split as `<name>` (a held-out kernel's
    spellings are held out too); a spelling that turns size parameters into macros drops their
    arguments from the spec."""
    out = []
    for k in kernels:
        out.append(k)
        sizes = tomllib.loads(k.spec)[k.name].get("sizes", {})
        for spelling, source in spellings(k.source, sizes).items():
            name = f"{k.name}_s_{spelling.replace('-', '_')}"
            spec = re.sub(rf"^\[{k.name}(\.args)?\]$", lambda m: f"[{name}{m[1] or ''}]", k.spec, flags=re.M)
            for size in sizes:
                if not re.search(rf"\bint {size}\b", source):
                    spec = re.sub(rf'^{size} = "{size}"\n', "", spec, flags=re.M)
            out.append(CorpusKernel(name, k.family, re.sub(rf"\b{k.name}\b", name, source), spec, k.name))
    return out


def write(kernels: list[CorpusKernel], out_dir: Path, seed: int, *, force: bool = False) -> Path:
    """Write `name.cu`, `name.cuopt.toml` per kernel and the manifest; returns the manifest's path.
    A non-empty directory is refused unless `force`; then a previous corpus's files are replaced."""
    if out_dir.exists() and not out_dir.is_dir():
        raise CuoptError(f"{out_dir}: not a directory")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not force:
        raise CuoptError(f"{out_dir}: directory is not empty; pass --force to write the corpus into it")
    out_dir.mkdir(parents=True, exist_ok=True)
    _remove_previous(out_dir)
    for k in kernels:
        (out_dir / f"{k.name}.cu").write_text(k.source)
        spec_path_for(out_dir / f"{k.name}.cu").write_text(k.spec)
    manifest = {"seed": seed, "count": len(kernels),
                "kernels": [{"name": k.name, "family": k.family, "split": k.split, "file": f"{k.name}.cu",
                             **({"spells": k.base} if k.base else {})} for k in kernels]}
    path = out_dir / MANIFEST
    path.write_text(json.dumps(manifest, indent=2) + "\n")
    return path


def _remove_previous(out_dir: Path) -> None:
    """Remove the kernels a previous manifest lists, so that none of them outlives it."""
    try:
        listed = [Path(k["file"]).name for k in json.loads((out_dir / MANIFEST).read_text())["kernels"]]
    except (OSError, ValueError, KeyError, TypeError):
        return
    for name in listed:
        for path in (out_dir / name, spec_path_for(out_dir / name)):
            path.unlink(missing_ok=True)


def manifest_splits(paths: list[Path]) -> dict[str, str]:
    """Kernel name -> "train" or "heldout", from the manifest of each corpus directory."""
    splits: dict[str, str] = {}
    for p in paths:
        manifest = (p if p.is_dir() else p.parent) / MANIFEST
        if manifest.is_file():
            for k in json.loads(manifest.read_text()).get("kernels", []):
                splits[k["name"]] = k["split"]
    return splits


def split_targets(paths: list[Path], split: str) -> tuple[list[Any], dict[str, str]]:
    """The kernels of `paths` in `split` (kernels no manifest lists count as train), and the splits;
    collection warnings are printed."""
    if split not in SPLITS:
        raise CuoptError(f"--split {split!r}: expected one of {', '.join(SPLITS)}")
    warnings: list[str] = []
    splits = manifest_splits(paths)
    targets = [t for t in collect(paths, None, warnings) if split == "all" or splits.get(t.kernel.name, "train") == split]
    for w in warnings:
        ui.warn(w)
    if not targets:
        raise CuoptError(f"no kernel of the {split} split in {', '.join(map(str, paths))}")
    return targets, splits
