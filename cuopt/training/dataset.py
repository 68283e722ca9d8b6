"""Self-play data for the learned policy: JSON Lines, one row per expanded search node (the
format is in docs/policy.md), read and checked row by row."""
from __future__ import annotations

import gzip
import hashlib
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from cuopt.errors import CuoptError
from cuopt.search import features

TRAIN = "train"


@dataclass(frozen=True)
class ActionRow:
    """One child of a node: the rewrite, its features, its visits and its measured outcome."""

    id: str
    rule: str
    features: tuple[float, ...]
    visits: int
    prior: float
    status: str
    ms: float | None
    log_speedup: float | None
    subtree_log_speedup: float | None = None  # the best the search found at or below this child

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def gain(self) -> float | None:
        """The best log-speedup measured at or below this child (its own when no subtree is
        recorded); None unless it was measured ok."""
        if not self.ok:
            return None
        return self.log_speedup if self.subtree_log_speedup is None else self.subtree_log_speedup


@dataclass(frozen=True)
class Row:
    """One expanded search node; `where` is `file:line`."""

    kernel: str
    split: str
    gpu: str
    node: int
    depth: int
    state: tuple[float, ...]
    state_ms: float
    baseline_ms: float
    actions: tuple[ActionRow, ...]
    value: float
    where: str


@dataclass
class Dataset:
    rows: list[Row] = field(default_factory=list)
    skipped: int = 0  # rows written for another feature schema
    upgraded: int = 0  # rows of an older schema read in this one's terms (features.OLDER_RULE_IDS)

    def split(self, name: str) -> list[Row]:
        return [r for r in self.rows if r.split == name]

    def held_out(self) -> list[Row]:
        """Every row not in the training split."""
        return [r for r in self.rows if r.split != TRAIN]

    def partition(self, validation: float = 0.0) -> tuple[list[Row], list[Row]]:
        """(rows to train on, rows to report on): the train split less the kernels set aside for
        validation, and every other row with those kernels' rows."""
        train, aside = [], []
        for r in self.split(TRAIN):
            (aside if set_aside(r.kernel, validation) else train).append(r)
        return train, self.held_out() + aside

    def summary(self) -> dict[str, Any]:
        actions = [a for r in self.rows for a in r.actions]
        return {
            "rows": len(self.rows),
            "skipped_other_schema": self.skipped,
            "upgraded_older_schema": self.upgraded,
            "splits": dict(sorted(Counter(r.split for r in self.rows).items())),
            "kernels": {s: len({r.kernel for r in self.rows if r.split == s})
                        for s in sorted({r.split for r in self.rows})},
            "gpus": sorted({r.gpu for r in self.rows}),
            "actions": len(actions),
            "actions_per_row": round(len(actions) / len(self.rows), 2) if self.rows else 0.0,
            "status": dict(Counter(a.status for a in actions).most_common()),
            "mean_value": round(sum(r.value for r in self.rows) / len(self.rows), 4) if self.rows else 0.0,
        }


def set_aside(kernel: str, fraction: float) -> bool:
    """Whether a training kernel is set aside for validation: its name's hash falls in the first
    `fraction` of the range, so a kernel is set aside or not whatever else the dataset holds."""
    return int(hashlib.sha256(kernel.encode()).hexdigest()[:12], 16) < fraction * 16 ** 12


class _BadRow(Exception):
    """A row that breaks the format: the key and what is wrong with it."""


def load(paths: Iterable[Path]) -> Dataset:
    """Read every file (gzip-compressed when it ends in .gz); rows of an older schema that
    `features.upgraded_action` reads are upgraded, rows of any other schema version are skipped;
    both are counted."""
    out = Dataset()
    for path in paths:
        _read(Path(path), out)
    return out


def _read(path: Path, out: Dataset) -> None:
    try:
        text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    except OSError as exc:
        raise CuoptError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (EOFError, UnicodeDecodeError) as exc:
        raise CuoptError(f"{path}: cannot read: {exc}") from None
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CuoptError(f"{where}: not valid JSON: {exc.msg}") from None
        try:
            version = _number(obj, "schema", int)
            if version != features.SCHEMA_VERSION and version not in features.OLDER_RULE_IDS:
                out.skipped += 1
                continue
            out.rows.append(_row(obj, where, version))
            out.upgraded += version != features.SCHEMA_VERSION
        except _BadRow as exc:
            raise CuoptError(f"{where}: {exc}") from None


def _row(obj: dict[str, Any], where: str, version: int) -> Row:
    actions = _get(obj, "actions", list)
    return Row(
        kernel=_get(obj, "kernel", str), split=_get(obj, "split", str), gpu=_get(obj, "gpu", str),
        node=_number(obj, "node", int), depth=_number(obj, "depth", int),
        state=_vector(obj, "state", len(features.STATE_NAMES)),
        state_ms=_positive(obj, "state_ms"), baseline_ms=_positive(obj, "baseline_ms"),
        actions=tuple(_action(a, f"actions[{i}]", version) for i, a in enumerate(actions)),
        value=_non_negative(obj, "value"), where=where)


def _action(obj: Any, prefix: str, version: int) -> ActionRow:
    if not isinstance(obj, dict):
        raise _BadRow(f"{prefix}: expected an object")
    try:
        status = _get(obj, "status", str)
        log_speedup = obj.get("log_speedup")
        if status == "ok":
            log_speedup = _number(obj, "log_speedup", float)
        elif log_speedup is not None:
            raise _BadRow(f"log_speedup: expected null for status {status!r}")
        ms = None if obj.get("ms") is None else _positive(obj, "ms")
        subtree = None if obj.get("subtree_log_speedup") is None else _number(obj, "subtree_log_speedup", float)
        visits = _number(obj, "visits", int)
        if visits < 0:
            raise _BadRow(f"visits: expected >= 0, got {visits}")
        rule = _get(obj, "rule", str)
        if version == features.SCHEMA_VERSION:
            vector = _vector(obj, "features", len(features.ACTION_NAMES))
        else:
            old = len(features.ACTION_NAMES) - len(features.RULE_IDS) + len(features.OLDER_RULE_IDS[version])
            vector = tuple(features.upgraded_action(version, rule, list(_vector(obj, "features", old))))
        return ActionRow(id=_get(obj, "id", str), rule=rule, features=vector, visits=visits,
                         prior=_number(obj, "prior", float), status=status, ms=ms, log_speedup=log_speedup,
                         subtree_log_speedup=subtree)
    except _BadRow as exc:
        raise _BadRow(f"{prefix}.{exc}") from None


def _get(obj: Any, key: str, kind: type) -> Any:
    if not isinstance(obj, dict):
        raise _BadRow("expected a JSON object")
    if key not in obj:
        raise _BadRow(f"{key}: missing")
    value = obj[key]
    if not isinstance(value, kind):
        raise _BadRow(f"{key}: expected {_KIND_NAMES[kind]}, got {json.dumps(value)[:40]}")
    return value


_KIND_NAMES = {str: "a string", list: "a list", int: "an integer", float: "a number", (int, float): "a number"}


def _number(obj: Any, key: str, kind: type) -> Any:
    """An int (kind int) or a finite number (kind float); booleans are neither."""
    value = _get(obj, key, (int, float) if kind is float else int)
    if isinstance(value, bool) or isinstance(value, float) and not math.isfinite(value):
        raise _BadRow(f"{key}: expected {_KIND_NAMES[kind]}, got {json.dumps(value)}")
    return kind(value)


def _positive(obj: Any, key: str) -> float:
    value = _number(obj, key, float)
    if value <= 0:
        raise _BadRow(f"{key}: expected > 0, got {value}")
    return value


def _non_negative(obj: Any, key: str) -> float:
    value = _number(obj, key, float)
    if value < 0:
        raise _BadRow(f"{key}: expected >= 0, got {value}")
    return value


def _vector(obj: Any, key: str, length: int) -> tuple[float, ...]:
    values = _get(obj, key, list)
    if len(values) != length:
        raise _BadRow(f"{key}: expected {length} numbers, got {len(values)}")
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise _BadRow(f"{key}[{i}]: expected a finite number, got {json.dumps(v)}")
    return tuple(float(v) for v in values)
