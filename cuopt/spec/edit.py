"""Edit a spec file's text in place: set one kernel's launch, keeping everything else as written."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from cuopt.spec import expr as E
from cuopt.spec.model import COMPILE_TABLE, Launch

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def launch_lines(launch: Launch) -> dict[str, str]:
    """TOML lines for block, grid and (when not zero) shared."""
    out = {"block": f"block = {json.dumps(list(launch.block))}",
           "grid": "grid = [" + ", ".join(json.dumps(str(g)) for g in launch.grid) + "]"}
    if launch.shared != E.Num(0):
        out["shared"] = f"shared = {json.dumps(str(launch.shared))}"
    return out


def _without_comment(line: str) -> str:
    """The line up to a `#` that is not inside a string."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return line[:i]
    return line


def set_launch(text: str, kernel: str, launch: Launch) -> str:
    """Replace (or add) block, grid and shared in the `[kernel]` table."""
    lines = text.splitlines(keepends=True)
    header = re.compile(rf"^\s*\[\s*{re.escape(kernel)}\s*\]\s*(#.*)?$")
    start = next((i for i, ln in enumerate(lines) if header.match(ln)), None)
    if start is None:
        raise ValueError(f"no [{kernel}] table")
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"^\s*\[", lines[i])), len(lines))
    wanted = launch_lines(launch)
    body = lines[start + 1:end]
    out: list[str] = []
    i = 0
    done: set[str] = set()
    while i < len(body):
        m = re.match(r"^\s*(block|grid|shared)\s*=", body[i])
        if not m:
            out.append(body[i])
            i += 1
            continue
        key = m.group(1)
        j, depth = i, 0
        while True:  # a value may span lines until its brackets balance
            code = _without_comment(body[j])
            depth += code.count("[") - code.count("]")
            if depth <= 0 or j + 1 >= len(body):
                break
            j += 1
        comments = [body[k].rstrip("\n")[len(_without_comment(body[k].rstrip("\n"))):] for k in range(i, j + 1)]
        comment = next((c.strip() for c in comments if c.strip()), "")
        if key in wanted:
            out.append(wanted[key] + (f"  {comment}" if comment else "") + "\n")
        done.add(key)
        i = j + 1
    extra = [wanted[k] + "\n" for k in ("block", "grid", "shared") if k in wanted and k not in done]
    return "".join(lines[:start + 1] + extra + out + lines[end:])


def relocate(text: str, spec_dir: Path, dest_dir: Path) -> str:
    """The spec text for a copy of its .cu file in `dest_dir`: the `[compile]` table's include
    directories (relative to the spec's directory) rewritten relative to `dest_dir`."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if re.match(rf"^\s*\[\s*{COMPILE_TABLE}\s*\]", ln)), None)
    if start is None or Path(spec_dir).resolve() == Path(dest_dir).resolve():
        return text
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"^\s*\[", lines[i])), len(lines))
    first = next((i for i in range(start + 1, end) if re.match(r"^\s*include\s*=", lines[i])), None)
    if first is None:
        return text
    last, depth = first, 0
    while True:  # the array may span lines until its brackets balance
        code = _without_comment(lines[last])
        depth += code.count("[") - code.count("]")
        if depth <= 0 or last + 1 >= end:
            break
        last += 1
    included = tomllib.loads("".join(lines[start:end]))[COMPILE_TABLE]["include"]
    moved = [os.path.relpath((Path(spec_dir) / d).resolve(), Path(dest_dir).resolve()) for d in included]
    return "".join(lines[:first] + [f"include = {json.dumps(moved)}\n"] + lines[last + 1:])
