"""SARIF 2.1.0 for `cuopt check --format sarif`, in the subset GitHub code scanning accepts:
tool.driver.rules describe every code, each result has a ruleId, a level, a message and a
physical location with a region (line 1 stands in for a whole-file diagnostic)."""
from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any, Mapping
from urllib.parse import quote

from cuopt.lint.diagnostics import Code, Diagnostic

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
VERSION = "2.1.0"


def sarif_log(diagnostics: list[Diagnostic], codes: Mapping[str, Code], tool_version: str) -> dict[str, Any]:
    """A SARIF log with one run; `codes` must hold the code of every diagnostic (they become the rules)."""
    index = {code: i for i, code in enumerate(codes)}
    driver = {"name": "cuopt", "version": tool_version, "semanticVersion": tool_version,
              "rules": [_rule(c) for c in codes.values()]}
    return {
        "$schema": SCHEMA,
        "version": VERSION,
        "runs": [{
            "tool": {"driver": driver},
            "results": [_result(d, index[d.code]) for d in diagnostics],
        }],
    }


def _rule(code: Code) -> dict[str, Any]:
    return {
        "id": code.id,
        "name": "".join(part.capitalize() for part in code.id.replace("_", "-").split("-")),
        "shortDescription": {"text": code.title},
        "fullDescription": {"text": code.help},
        "help": {"text": code.help},
        "defaultConfiguration": {"level": code.level},
    }


def _result(d: Diagnostic, rule_index: int) -> dict[str, Any]:
    region: dict[str, Any] = {"startLine": d.line or 1}
    if d.line is not None and d.column is not None:
        region["startColumn"] = d.column
    return {
        "ruleId": d.code,
        "ruleIndex": rule_index,
        "level": d.severity,
        "message": {"text": d.message},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": artifact_uri(d.path)}, "region": region}}],
    }


def artifact_uri(path: str) -> str:
    """Relative paths as POSIX relative URIs (GitHub resolves them against the repository root),
    absolute ones as file:// URIs."""
    p = Path(path)
    return p.as_uri() if p.is_absolute() else quote(str(PurePosixPath(*p.parts)))
