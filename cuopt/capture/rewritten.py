"""A capture's manifest told that `cuopt optimize` rewrote one of its sources with a variant it
validated on the capture's data: the file's new hash is recorded (the captured one kept), so the
capture stays usable for the file as cuopt left it, and a hand edit still makes it stale."""
from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

from cuopt.capture.manifest import MANIFEST, load, sha256
from cuopt.writeback import write_atomic


def record_rewrite(directory: Path, path: Path, before: bytes, after: bytes, kernel: str) -> str | None:
    """Record in the manifest of the capture in `directory` that `path` went from `before` to `after`
    when cuopt optimize wrote `kernel`'s variant, validated on this capture; the manifest is replaced
    atomically. Nothing changes when the capture does not list `path` or `before` is not a version its
    data fits. Why the manifest could not be updated, or None."""
    manifest = directory / MANIFEST
    capture = load(directory)
    target = path.resolve()
    index = next((i for i, s in enumerate(capture.sources) if (capture.root / s.path).resolve() == target), None)
    if index is None or sha256(before) not in capture.sources[index].accepted:
        return None
    if not os.access(directory, os.W_OK):
        return f"{manifest}: cannot write: its directory is not writable"
    try:
        raw = json.loads(manifest.read_text())
    except (OSError, ValueError) as exc:
        return f"{manifest}: cannot read it again ({exc})"
    entry = raw["sources"][index]
    entry.setdefault("captured_sha256", entry["sha256"])
    entry["sha256"] = sha256(after)
    entry.setdefault("rewritten", []).append({
        "sha256": entry["sha256"], "by": "cuopt optimize", "kernel": kernel, "validated_on": "this capture",
        "at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")})
    try:
        write_atomic(manifest, (json.dumps(raw, indent=1) + "\n").encode())
    except OSError as exc:
        return f"{manifest}: cannot write: {exc.strerror}"
    return None
