"""Take a capture: check the input, run the program with the injection library, turn its raw
records into `.cuopt/captures/<name>/` (written whole or not at all)."""
from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cuopt import __version__
from cuopt.capture import manifest, native, records, run
from cuopt.capture.kernels import Chosen, choose, environment_value
from cuopt.compile_settings import NO_SETTINGS, CompileSettings, resolve
from cuopt.errors import CuoptError
from cuopt.targets import read_source

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """`4096`, `512M`, `2GiB`: a byte count (units are powers of 1024)."""
    m = _SIZE.fullmatch(text)
    if m is None:
        raise CuoptError(f"--max-bytes {text!r}: expected a size such as 4096, 512M or 2GiB")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


@dataclass(frozen=True)
class Result:
    capture: manifest.Capture
    exit: int  # the program's exit status (negative: the signal that ended it)


def take(sources: list[Path], command: list[str], kernels: list[str] | None = None, launches: int = 1,
         max_bytes: int = 1 << 30, name: str | None = None, settings: CompileSettings = NO_SETTINGS) -> Result:
    """Capture the chosen kernels' first `launches` launches each from `command`; nothing is written
    when the input is bad or nothing was captured."""
    if launches < 1:
        raise CuoptError(f"--launches {launches}: expected at least 1")
    if max_bytes < 0:
        raise CuoptError(f"--max-bytes {max_bytes}: expected a size of at least 0")
    for p in sources:
        if not p.is_file():
            raise CuoptError(f"{p}: no such file")
    parsed = {p: read_source(p, resolve(p, NO_SETTINGS, settings)) for p in sources}
    chosen = choose(parsed, kernels or [])
    run.check_command(command)
    run.require_driver()
    library = native.library()
    final = manifest.captures_dir(sources[0].parent) / (name or sources[0].stem)
    created = [d for d in (final.parent.parent, final.parent) if not d.exists()]
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        raw = work / "raw"
        raw.mkdir()
        status = run.run(command, library, {
            "CUOPT_CAPTURE_DIR": str(raw.resolve()), "CUOPT_CAPTURE_KERNELS": environment_value(chosen),
            "CUOPT_CAPTURE_LAUNCHES": str(launches), "CUOPT_CAPTURE_MAX_BYTES": str(max_bytes)})
        capture = _store(work, raw, final, sources, chosen, command, status, launches, max_bytes)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        for d in reversed(created):  # nothing written: not even the directories
            if d.is_dir() and not any(d.iterdir()):
                d.rmdir()
        raise
    shutil.rmtree(work, ignore_errors=True)
    return Result(capture, status)


def _store(work: Path, raw: Path, final: Path, sources: list[Path], chosen: list[Chosen], command: list[str],
           status: int, launches: int, max_bytes: int) -> manifest.Capture:
    """Decode the raw records into the capture directory, check it with the reader the other
    commands use, then put it in place of the old one."""
    root = final.parent.parent.parent
    out = work / "capture"
    out.mkdir()
    taken, omitted, device = records.decode(raw, out, chosen, root, records.Budget(max_bytes), launches)
    obj = {"format": manifest.FORMAT, "cuopt": __version__,
           "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": command, "cwd": os.getcwd(), "exit": status, "device": device,
           "sources": [{"path": os.path.relpath(p.resolve(), root.resolve()), "sha256": manifest.sha256(p.read_bytes())}
                       for p in sources],
           "launches": taken, "omitted": omitted}
    (out / manifest.MANIFEST).write_text(json.dumps(obj, indent=1) + "\n")
    manifest.load(out)
    if final.exists():
        os.replace(final, work / "old")
    os.replace(out, final)
    return manifest.load(final)
