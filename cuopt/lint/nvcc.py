"""`cuopt check`'s compile step: run nvcc on a whole .cu file and turn its log into diagnostics."""
from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from cuopt.compile_settings import NO_SETTINGS, CompileSettings
from cuopt.lint.diagnostics import Diagnostic
from cuopt.evaluate.compile import BASE_FLAGS, COMPILE_TIMEOUT_S, first_error

# cudafe/EDG front end: `dir/k.cu(7): error: identifier "x" is undefined`
_FRONT_END = re.compile(r"^(?P<path>.+?)\((?P<line>\d+)\): (?:catastrophic )?error(?: #[\w-]+)?: (?P<msg>.+)$")
# host preprocessor (gcc style): `dir/k.cu:2:10: fatal error: nope.h: No such file or directory`
_HOST = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?:(?P<col>\d+):)? (?:fatal )?error: (?P<msg>.+)$")
# no source position: `ptxas error   : Entry function '_Z1kPf' uses too much shared data (...)`
_TOOL = re.compile(r"^(?P<tool>ptxas|nvcc|nvlink|cicc)\s+(?:fatal|error)\s*: (?P<msg>.+)$")


def compile_file(nvcc: str, path: Path, arch: str, settings: CompileSettings = NO_SETTINGS) -> list[Diagnostic]:
    """Compile `path` to a cubin for `arch` with `settings` (the cubin is thrown away); one error per
    nvcc error."""
    with tempfile.TemporaryDirectory(prefix="cuopt-check-") as tmp:
        argv = [nvcc, "-cubin", f"-arch={arch}", *BASE_FLAGS, *settings.nvcc_args(),
                "-o", str(Path(tmp, "check.cubin")), str(path)]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return [Diagnostic(str(path), None, None, "error", "compile", f"nvcc timed out after {COMPILE_TIMEOUT_S} s")]
        except OSError as exc:
            return [Diagnostic(str(path), None, None, "error", "compile", f"cannot run {nvcc}: {exc.strerror}")]
    if proc.returncode == 0:
        return []
    log = proc.stdout + proc.stderr
    return errors_in_log(log, path) or [Diagnostic(str(path), None, None, "error", "compile",
                                                   f"nvcc failed: {first_error(log)}")]


def errors_in_log(log: str, path: Path) -> list[Diagnostic]:
    """The errors of an nvcc log, located where nvcc says (headers keep their own path)."""
    out: list[Diagnostic] = []
    for raw in log.splitlines():
        line = raw.strip()
        m = _FRONT_END.match(line) or _HOST.match(line)
        if m is not None:
            col = m.groupdict().get("col")
            out.append(Diagnostic(_display(m.group("path"), path), int(m.group("line")), int(col) if col else None,
                                  "error", "compile", m.group("msg")))
            continue
        m = _TOOL.match(line)
        if m is not None:
            out.append(Diagnostic(str(path), None, None, "error", "compile", f"{m.group('tool')}: {m.group('msg')}"))
    return out


def _display(reported: str, path: Path) -> str:
    """The path as the user named it when nvcc means the file itself, else nvcc's path."""
    try:
        same = Path(reported).resolve() == path.resolve()
    except OSError:
        same = False
    return str(path) if same else reported
