"""Named transforms, by the name rules give in `transform = "..."`: the template transform and each
rule folder's own (rules/<id>/transform.py, its TRANSFORM, under the name its rule.toml gives),
imported from the file's path, in a checkout and in an installed cuopt alike. The package's modules
are the helpers several of those transforms share."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from cuopt.resources import data_dir
from cuopt.rewrite.context import Transform
from cuopt.rewrite.rule import RULE_FILE, RuleError, load_rule, rule_folders
from cuopt.rewrite.template import TemplateTransform

TRANSFORM_FILE = "transform.py"


def load_transform(folder: Path) -> Transform:
    """The TRANSFORM that rules/<id>/transform.py defines, its module imported once from the path."""
    name = f"cuopt.rewrite.transforms.rules.{folder.name.replace('-', '_')}"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, folder / TRANSFORM_FILE)
        if spec is None or spec.loader is None:
            raise RuleError(f"{folder.name}/{TRANSFORM_FILE}: cannot be imported")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # its dataclasses look the module up while the file runs
        spec.loader.exec_module(module)
    transform = getattr(module, "TRANSFORM", None)
    if transform is None:
        raise RuleError(f"{folder.name}/{TRANSFORM_FILE}: defines no TRANSFORM (the rule's transform object)")
    return transform


def folder_transforms(directory: Path) -> dict[str, Transform]:
    """The transforms of the rule folders that hold a transform.py, by their rules' transform names."""
    return {load_rule(folder / RULE_FILE).transform: load_transform(folder)
            for folder in rule_folders(directory) if (folder / TRANSFORM_FILE).is_file()}


TRANSFORMS: dict[str, Transform] = {
    "template": TemplateTransform(),
}
TRANSFORMS.update(folder_transforms(data_dir("rules")))
