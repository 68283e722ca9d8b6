"""compute-sanitizer (memcheck, racecheck) on one launch of a candidate, the tools at once."""
from __future__ import annotations

import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from cuopt.evaluate.client import KernelRef, LaunchDims
from cuopt.spec.bind import Instance

ERROR_EXIT = 86
TOOLS = ("memcheck", "racecheck")


@dataclass(frozen=True)
class SanitizerReport:
    tool: str
    clean: bool
    conclusive: bool  # False when the tool could not run the kernel at all
    detail: str


def find_sanitizer() -> str | None:
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and Path(root, "bin", "compute-sanitizer").is_file():
            return str(Path(root, "bin", "compute-sanitizer"))
    return None


def sanitize(kernel: KernelRef, instance: Instance, dims: LaunchDims, timeout_s: float = 300.0,
             tools: tuple[str, ...] = TOOLS) -> list[SanitizerReport]:
    """A report per tool (in `tools` order), each tool in its own process, all at once."""
    tool_path = find_sanitizer()
    if tool_path is None:
        return []
    with tempfile.TemporaryDirectory(prefix="cuopt-sanitize-") as tmp:
        request = Path(tmp, "request.pickle")
        request.write_bytes(pickle.dumps({"instance": instance, "kernel": kernel.wire(), "launch": dims.wire()}))
        with ThreadPoolExecutor(max_workers=len(tools)) as pool:
            return list(pool.map(lambda tool: _run(tool_path, tool, request, timeout_s), tools))


def _run(tool_path: str, tool: str, request: Path, timeout_s: float) -> SanitizerReport:
    argv = [tool_path, "--tool", tool, "--error-exitcode", str(ERROR_EXIT), sys.executable, "-m",
            "cuopt.evaluate.standalone", str(request)]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return SanitizerReport(tool, True, False, f"timed out after {timeout_s:.0f} s")
    log = proc.stdout + proc.stderr
    if proc.returncode == ERROR_EXIT or _reported(log):
        first = next((ln.strip() for ln in log.splitlines() if re.search(r"(Invalid|Error|Hazard|hazard)", ln)),
                     "errors reported")
        return SanitizerReport(tool, False, True, first.lstrip("= ").strip())
    if proc.returncode != 0:
        tail = " | ".join(ln.strip() for ln in log.strip().splitlines()[-3:])
        return SanitizerReport(tool, True, False, f"could not run (exit {proc.returncode}): {tail}")
    return SanitizerReport(tool, True, True, "no errors")


def _reported(log: str) -> bool:
    m = re.search(r"ERROR SUMMARY:\s*(\d+)", log)
    if m and int(m.group(1)) > 0:
        return True
    m = re.search(r"RACECHECK SUMMARY:\s*(\d+)\s+hazard", log)
    return bool(m and int(m.group(1)) > 0)
