"""Reading self-play data: rows by split, summary figures, rows of another schema skipped and
counted, and one clear error naming file:line and the key for a row that breaks the format."""
from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any, Callable

import pytest

from cuopt.errors import CuoptError
from cuopt.search import features
from cuopt.training import dataset
from tests.training import synthetic


def test_rows_by_split_and_summary(tmp_path: Path) -> None:
    rows = synthetic.rows(40, seed=1)
    files = [synthetic.write(tmp_path / "a.jsonl", rows[:25]), synthetic.write(tmp_path / "b.jsonl", rows[25:])]
    data = dataset.load(files)
    assert len(data.rows) == 40 and data.skipped == 0
    train = data.split("train")
    assert len(train) + len(data.held_out()) == 40
    assert {r.split for r in data.held_out()} == {"heldout"}
    first = data.rows[0]
    assert first.where == f"{tmp_path / 'a.jsonl'}:1"
    assert len(first.state) == len(features.STATE_NAMES)
    assert all(len(a.features) == len(features.ACTION_NAMES) for a in first.actions)
    summary = data.summary()
    assert summary["rows"] == 40 and summary["splits"] == {"heldout": 40 - len(train), "train": len(train)}
    assert summary["actions"] == sum(len(r["actions"]) for r in rows)
    assert sum(summary["status"].values()) == summary["actions"]


def test_rows_of_another_schema_are_skipped_and_counted(tmp_path: Path) -> None:
    rows = synthetic.rows(6)
    for r in rows[:2]:
        r["schema"] = features.SCHEMA_VERSION + 1
        r["state"] = [0.0]  # another schema may have other features: not checked
    data = dataset.load([synthetic.write(tmp_path / "d.jsonl", rows)])
    assert len(data.rows) == 4 and data.skipped == 2
    assert data.summary()["skipped_other_schema"] == 2


def test_rows_of_schema_2_are_read_with_this_schemas_rule_one_hot(tmp_path: Path) -> None:
    old_rules = features.OLDER_RULE_IDS[2]
    tail = features.ACTION_NAMES[len(features.RULE_IDS) + 1:]
    rows = synthetic.rows(3, seed=4)
    for r in rows:
        r["schema"] = 2
        for i, a in enumerate(r["actions"]):
            a["rule"] = ("register-tile", "stream", "unroll")[i % 3]  # stream came after schema 2
            one_hot = [float(a["rule"] == x) for x in old_rules] + [float(a["rule"] not in old_rules)]
            a["features"] = one_hot + [float(j) for j in range(len(tail))]
    data = dataset.load([synthetic.write(tmp_path / "v2.jsonl", rows)])
    assert len(data.rows) == 3 and data.upgraded == 3 and data.skipped == 0
    assert data.summary()["upgraded_older_schema"] == 3
    for a in (a for r in data.rows for a in r.actions):
        named = dict(zip(features.ACTION_NAMES, a.features))
        assert named[f"rule:{a.rule}"] == 1.0 and named["rule:other"] == 0.0
        assert sum(named[f"rule:{x}"] for x in features.RULE_IDS) == 1.0
        assert [named[n] for n in tail] == [float(j) for j in range(len(tail))]


def test_a_schema_2_row_with_this_schemas_length_is_an_error(tmp_path: Path) -> None:
    rows = synthetic.rows(1)
    rows[0]["schema"] = 2  # features of schema 3's length: too long for schema 2
    with pytest.raises(CuoptError, match=r"v2\.jsonl:1: actions\[0\]\.features: expected \d+ numbers"):
        dataset.load([synthetic.write(tmp_path / "v2.jsonl", rows)])


def test_blank_lines_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text("\n" + json.dumps(synthetic.rows(1)[0]) + "\n\n")
    assert dataset.load([path]).rows[0].where == f"{path}:2"


def _first_action(**changes: Any) -> Callable[[dict[str, Any]], None]:
    return lambda row: row["actions"][0].update(changes)


BAD: list[tuple[Callable[[dict[str, Any]], Any], str]] = [
    (lambda r: r.pop("kernel"), "kernel: missing"),
    (lambda r: r.update(split=3), "split: expected a string, got 3"),
    (lambda r: r.update(state=[1.0, 2.0]), f"state: expected {len(features.STATE_NAMES)} numbers, got 2"),
    (lambda r: r.update(state=["x"] * len(features.STATE_NAMES)), 'state[0]: expected a finite number, got "x"'),
    (lambda r: r.update(value=-0.5), "value: expected >= 0, got -0.5"),
    (lambda r: r.update(value=math.nan), "value: expected a number, got NaN"),
    (lambda r: r.update(node=True), "node: expected an integer, got true"),
    (lambda r: r.update(state_ms=0), "state_ms: expected > 0, got 0.0"),
    (lambda r: r.update(actions={}), "actions: expected a list, got {}"),
    (_first_action(features=[0.0]), f"actions[0].features: expected {len(features.ACTION_NAMES)} numbers, got 1"),
    (_first_action(visits=-1), "actions[0].visits: expected >= 0, got -1"),
    (_first_action(status=None), "actions[0].status: expected a string, got null"),
    (_first_action(subtree_log_speedup="x"), 'actions[0].subtree_log_speedup: expected a number, got "x"'),
]


@pytest.mark.parametrize("edit, message", BAD, ids=[m.split(":")[0] for _, m in BAD])
def test_a_bad_row_names_file_line_and_key(tmp_path: Path, edit: Callable[[dict[str, Any]], Any],
                                           message: str) -> None:
    rows = synthetic.rows(3)
    bad = copy.deepcopy(rows[1])
    edit(bad)
    path = synthetic.write(tmp_path / "d.jsonl", [rows[0], bad, rows[2]])
    with pytest.raises(CuoptError) as err:
        dataset.load([path])
    assert str(err.value) == f"{path}:2: {message}"


def test_subtree_log_speedup_is_optional(tmp_path: Path) -> None:
    rows = synthetic.rows(2)
    for r in rows:
        for a in r["actions"]:
            a.pop("subtree_log_speedup", None)
    rows[1]["actions"][0].update(status="ok", log_speedup=0.1, subtree_log_speedup=0.3)
    data = dataset.load([synthetic.write(tmp_path / "d.jsonl", rows)])
    assert all(a.subtree_log_speedup is None for a in data.rows[0].actions)
    assert data.rows[1].actions[0].subtree_log_speedup == 0.3 and data.rows[1].actions[0].gain == 0.3


def test_log_speedup_must_match_the_status(tmp_path: Path) -> None:
    rows = synthetic.rows(1)
    act = rows[0]["actions"][0]
    act.update(status="ok", log_speedup=None)
    path = synthetic.write(tmp_path / "d.jsonl", rows)
    with pytest.raises(CuoptError, match=r":1: actions\[0\]\.log_speedup: expected a number, got null$"):
        dataset.load([path])
    act.update(status="mismatch", log_speedup=0.1)
    synthetic.write(path, rows)
    with pytest.raises(CuoptError, match=r":1: actions\[0\]\.log_speedup: expected null for status 'mismatch'$"):
        dataset.load([path])


def test_not_json_and_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(synthetic.rows(1)[0]) + "\n{oops\n")
    with pytest.raises(CuoptError, match=r"d\.jsonl:2: not valid JSON: "):
        dataset.load([path])
    path.write_text("[1, 2]\n")
    with pytest.raises(CuoptError, match=r"d\.jsonl:1: expected a JSON object$"):
        dataset.load([path])


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CuoptError, match=r"nothing\.jsonl: cannot read: No such file or directory$"):
        dataset.load([tmp_path / "nothing.jsonl"])


def test_gzip_compressed_files_are_read(tmp_path: Path) -> None:
    import gzip

    rows = synthetic.rows(5, seed=3)
    plain = synthetic.write(tmp_path / "d.jsonl", rows)
    packed = tmp_path / "d.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert dataset.load([packed]).rows == [r.__class__(**{**vars(r), "where": r.where.replace("d.jsonl", "d.jsonl.gz")})
                                           for r in dataset.load([plain]).rows]
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(b"not gzip")
    with pytest.raises(CuoptError, match=r"broken\.jsonl\.gz: cannot read: "):
        dataset.load([broken])
