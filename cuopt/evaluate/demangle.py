"""Demangle cubin entry symbols (cu++filt, which ships with nvcc, else c++filt) and read the
template instantiation a symbol names."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from cuopt.errors import CuoptError
from cuopt.evaluate.toolkit import find_nvcc
from cuopt.source.templates import Instantiation, same_argument, split_args

TIMEOUT_S = 60


def demangler() -> str:
    """cu++filt next to nvcc or on PATH, else c++filt; CuoptError when there is neither."""
    nvcc = find_nvcc()
    beside = Path(nvcc).resolve().parent / "cu++filt" if nvcc else None
    if beside is not None and beside.is_file():
        return str(beside)
    found = shutil.which("cu++filt") or shutil.which("c++filt")
    if found is None:
        raise CuoptError("cu++filt not found (it ships with nvcc; c++filt from binutils also works): "
                         "cuopt needs it to find a template kernel's entry symbol")
    return found


def demangle(symbols: list[str]) -> dict[str, str]:
    """Each symbol's demangled form (a symbol that is not mangled stays as it is)."""
    if not symbols:
        return {}
    proc = subprocess.run([demangler()], input="\n".join(symbols) + "\n", capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or len(lines) != len(symbols):
        raise CuoptError(f"{demangler()} failed: {(proc.stderr or proc.stdout).strip() or 'no output'}")
    return dict(zip(symbols, lines))


def instantiation_of(demangled: str) -> Instantiation | None:
    """`void ns::scale<float, 256>(float*, float const*, float, int)` -> scale<float, 256>; None
    when the function is not a template instantiation."""
    depth, end = 0, None
    for i, ch in enumerate(demangled):  # the parameter list: the first `(` outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            end = i
            break
    head = (demangled[:end] if end is not None else demangled).strip()
    if not head.endswith(">"):
        return None
    depth = 0
    for i in range(len(head) - 1, -1, -1):  # the `<` matching the last `>`
        depth += (head[i] == ">") - (head[i] == "<")
        if depth == 0:
            name = head[:i].split(" ")[-1].split("::")[-1]
            return Instantiation(name, tuple(split_args(head[i + 1:-1])))
    return None


def matches(found: Instantiation, wanted: Instantiation) -> bool:
    return found.name == wanted.name and len(found.args) == len(wanted.args) and all(
        same_argument(a, b) for a, b in zip(found.args, wanted.args))
