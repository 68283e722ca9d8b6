"""`cuopt check`'s spec step: the spec next to a file must load, name its kernels, cover every
parameter with consistent types, and evaluate at every size set. Errors point into the spec."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from cuopt.lint.diagnostics import Diagnostic
from cuopt.source.kernels import SourceFile
from cuopt.spec import model
from cuopt.spec.bind import bind, resolve
from cuopt.spec.model import KernelSpec, SpecError

_TABLE = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\"'. -]+?)\s*=")
_WHERE = re.compile(r"^\[(?P<kernel>[^\]]+)\]:? (?P<key>[A-Za-z_][\w.\[\]-]*)?")  # `args.unnamed-4` too
_TOML_AT = re.compile(r"\(at line (\d+), column (\d+)\)")

Specs = dict[str, Optional[KernelSpec]]  # table name -> its spec, None where the spec is wrong


def check_spec(path: Path, source: SourceFile) -> tuple[list[Diagnostic], Specs | None]:
    """Diagnostics for the spec of `path` and the specs that passed; no spec file: ([], {});
    a spec file that does not load: ([error], None). A header next to a .cu file of its name
    (`conv2d.cuh` by `conv2d.cu`) has no spec: `conv2d.cuopt.toml` is the .cu file's."""
    spec_path = model.spec_path_for(path)
    if not spec_path.is_file() or path.suffix != ".cu" and path.with_suffix(".cu").is_file():
        return [], {}
    try:
        text = spec_path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        return [Diagnostic(str(spec_path), None, None, "error", "spec", f"cannot read: {reason}")], None
    try:
        spec_file = model.load(spec_path)
    except SpecError as exc:
        return [_error(spec_path, text, str(exc))], None
    diagnostics: list[Diagnostic] = []
    specs: Specs = {}
    for name, spec in spec_file.kernels.items():
        specs[name] = None
        try:
            kernel = resolve(spec, source, path.name)
        except SpecError as exc:
            diagnostics.append(_error(spec_path, text, str(exc)))
            continue
        if kernel.errors:  # reported as parse errors; binding would only repeat them
            continue
        try:
            bind(spec, kernel).instances()
        except SpecError as exc:
            diagnostics.append(_error(spec_path, text, str(exc)))
            continue
        specs[name] = spec
    return diagnostics, specs


def _error(spec_path: Path, text: str, message: str) -> Diagnostic:
    """A spec error at the line of the key it names (the file name prefix goes: the path says it)."""
    message = message.removeprefix(f"{spec_path.name}: ")
    at = _TOML_AT.search(message)
    if at is not None:
        return Diagnostic(str(spec_path), int(at.group(1)), int(at.group(2)), "error", "spec", message)
    where = _WHERE.match(message)
    line = key_line(text, where.group("kernel"), where.group("key")) if where else None
    return Diagnostic(str(spec_path), line, None, "error", "spec", message)


def key_line(text: str, kernel: str, key: str | None) -> int | None:
    """The line of `key` (`args.x`, `grid[0]`, `sizes.n`, ...) of `[kernel]` in a spec's TOML text:
    the key itself, else its table, else the kernel's table; None when none is found."""
    tables: dict[str, int] = {}
    keys: dict[tuple[str, str], int] = {}
    table = ""
    for number, line in enumerate(text.splitlines(), 1):
        m = _TABLE.match(line)
        if m is not None:
            table = _bare(m.group(1))
            tables.setdefault(table, number)
            continue
        m = _KEY.match(line)
        if m is not None:
            keys.setdefault((table, _bare(m.group(1))), number)
    top, _, sub = (key or "").partition(".")
    top = top.split("[")[0]
    sub = sub.split(".")[0].split("[")[0]
    candidates = [keys.get((f"{kernel}.{top}", sub)), tables.get(f"{kernel}.{top}"), keys.get((kernel, top)),
                  tables.get(kernel)]
    return next((c for c in candidates if c is not None), None)


def _bare(name: str) -> str:
    """A TOML key or table name without quotes and spaces: `"saxpy" . args` -> `saxpy.args`."""
    return re.sub(r"[\s\"']", "", name)
