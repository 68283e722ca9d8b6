"""The search trace: every candidate, the chosen path with its search statistics, the
confirmation; versioned JSON under `.cuopt/traces/`."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from cuopt.errors import CuoptError
from cuopt.writeback import write_atomic

TRACE_VERSION = 1


def trace_dir(cu_path: Path) -> Path:
    return cu_path.parent / ".cuopt" / "traces"


def write_trace(cu_path: Path, kernel: str, data: dict[str, Any]) -> Path:
    directory = trace_dir(cu_path)
    directory.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = directory / f"{cu_path.name}.{kernel}.{stamp}.json"
    n = 1
    while path.exists():
        n += 1
        path = directory / f"{cu_path.name}.{kernel}.{stamp}-{n}.json"
    path.write_text(json.dumps({"version": TRACE_VERSION, **data}, indent=1))
    return path


RESUMED_KEYS = ("created", "stop", "phases", "evaluations", "candidates", "chosen", "confirmation")


def add_resume(path: Path, search: dict[str, Any], seconds: float, outcome: str, budget: dict[str, Any]) -> None:
    """Record in the trace at `path` a resumed search of the same kernel (`search`: that search's
    trace data) whose outcome left the traced result standing, under `resumed`, with the kernel's
    budget as it stands after it; the file is replaced whole."""
    data = load_trace(path)
    resumed = {"seconds": seconds, "outcome": outcome, **{k: search[k] for k in RESUMED_KEYS if k in search}}
    data.update(resumed=resumed, budget=budget)
    write_atomic(path, json.dumps(data, indent=1).encode())


def load_trace(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise CuoptError(f"{path}: no such trace") from None
    except json.JSONDecodeError as exc:
        raise CuoptError(f"{path}: not a cuopt trace (invalid JSON: {exc})") from None
    if not isinstance(data, dict) or "version" not in data:
        raise CuoptError(f"{path}: not a cuopt trace (no version)")
    if data["version"] != TRACE_VERSION:
        raise CuoptError(f"{path}: trace version {data['version']} is not supported (this cuopt reads "
                         f"version {TRACE_VERSION})")
    return data


def latest_traces(cu_path: Path, kernel: str | None = None) -> list[Path]:
    """The newest trace of each kernel of `cu_path` (or of `kernel`)."""
    directory = trace_dir(cu_path)
    newest: dict[str, Path] = {}
    for p in sorted(directory.glob(f"{cu_path.name}.*.json"), key=lambda p: p.stat().st_mtime):
        name = p.name[len(cu_path.name) + 1:].split(".")[0]
        if kernel is None or name == kernel:
            newest[name] = p
    if not newest:
        what = f"kernel {kernel} of {cu_path}" if kernel else str(cu_path)
        raise CuoptError(f"no trace for {what} in {directory}; run `cuopt optimize {cu_path}` first")
    return [newest[k] for k in sorted(newest)]
