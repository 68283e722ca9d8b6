"""The transform registry: a rule folder's transform.py is imported from its path and registered
under the transform name its rule.toml gives."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuopt.resources import data_dir
from cuopt.rewrite.rule import RuleError, load_rules
from cuopt.rewrite.transforms import TRANSFORM_FILE, TRANSFORMS, folder_transforms

RULE = '''id = "{id}"
title = "t"
why = "w"
transform = "{transform}"
'''


def _folder(root: Path, rule_id: str, transform: str, code: str) -> Path:
    folder = root / rule_id
    folder.mkdir(parents=True)
    (folder / "rule.toml").write_text(RULE.format(id=rule_id, transform=transform))
    (folder / TRANSFORM_FILE).write_text(code)
    return folder


def test_a_folder_transform_is_registered_under_its_rules_name(tmp_path: Path) -> None:
    _folder(tmp_path, "demo-rule", "demo", '''from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Demo:
    label: str = "demo"

    def sites(self, ctx, rule):
        return []


TRANSFORM = Demo()
''')
    found = folder_transforms(tmp_path)
    assert list(found) == ["demo"] and found["demo"].label == "demo"
    assert folder_transforms(tmp_path)["demo"] is found["demo"]  # imported once


def test_a_transform_file_without_transform_is_an_error(tmp_path: Path) -> None:
    _folder(tmp_path, "no-transform", "none", "VALUE = 1\n")
    with pytest.raises(RuleError, match=r"no-transform/transform.py: defines no TRANSFORM"):
        folder_transforms(tmp_path)


def test_every_rule_names_a_registered_transform() -> None:
    rules = load_rules(data_dir("rules"))
    assert [r.id for r in rules.values() if r.transform not in TRANSFORMS] == []
    for name, transform in folder_transforms(data_dir("rules")).items():
        assert TRANSFORMS[name] is transform
