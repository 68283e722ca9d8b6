"""The injection library's raw records (launches.jsonl, counts.json, .bin snapshots) turned into
the manifest's launches (as its JSON objects) and .npy arrays, by the source's signatures and within
the byte budget."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cuopt.capture.kernels import Chosen, Resolved, check_layout, resolve
from cuopt.errors import CuoptError
from cuopt.evaluate.demangle import demangle
from cuopt.source.kernels import Param
from cuopt.spec.dtypes import itemsize, numpy_dtype

LAUNCHES = "launches.jsonl"
COUNTS = "counts.json"
LOG = "capture.log"
READY = "ready"


@dataclass
class RawLaunch:
    """One launch as the injection library wrote it: the enter record and, if it came, the exit's."""

    seq: int
    mangled: str
    ordinal: int
    grid: list[int]
    block: list[int]
    shared: int
    device: str
    params: list[dict[str, Any]]
    status: str | None = None  # None: no exit record (the program ended during the launch)
    after: dict[int, str] = field(default_factory=dict)  # allocation index -> file


def read_raw(raw: Path) -> tuple[list[RawLaunch], dict[str, int] | None, list[str]]:
    """The launches recorded in `raw`, the launch counts (None when the program did not exit
    normally) and notes on damaged records."""
    launches: dict[int, RawLaunch] = {}
    notes: list[str] = []
    path = raw / LAUNCHES
    lines = path.read_text(errors="replace").splitlines() if path.is_file() else []
    for n, line in enumerate(lines, 1):
        try:
            rec = json.loads(line)
            if rec["phase"] == "enter":
                launches[rec["seq"]] = RawLaunch(rec["seq"], rec["mangled"], rec["ordinal"], rec["grid"],
                                                 rec["block"], rec["shared"], rec.get("device", ""), rec["params"])
            elif rec["seq"] in launches:
                launch = launches[rec["seq"]]
                launch.status = rec["status"]
                launch.after = {a["allocation"]: a["file"] for a in rec["after"]}
        except (json.JSONDecodeError, KeyError, TypeError):
            notes.append(f"record {n} of the capture was cut short (the program ended while it was written)")
    counts = None
    try:
        counts = {str(k): int(v) for k, v in json.loads((raw / COUNTS).read_text()).items()}
    except (OSError, ValueError, AttributeError):
        pass
    return sorted(launches.values(), key=lambda r: r.seq), counts, notes


def log_line(raw: Path) -> str | None:
    """The first error the injection library logged, if any."""
    try:
        return next((ln for ln in (raw / LOG).read_text().splitlines() if ln.strip()), None)
    except OSError:
        return None


def human(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} B"


class Budget:
    """Bytes of arrays the capture may still write (--max-bytes)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, n: int) -> str | None:
        """Reserve `n` bytes; the reason it cannot, or None."""
        if self.used + n > self.limit:
            return f"over --max-bytes: {human(n)} asked, {human(self.limit - self.used)} left"
        self.used += n
        return None


def _file_stem(entry: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", entry).strip("_")


def scalar_value(p: Param, data: bytes) -> int | float:
    """A scalar argument's value from its bytes, by the source's type."""
    assert p.ctype is not None
    value = np.frombuffer(data, dtype=numpy_dtype(p.ctype.dtype), count=1)[0]
    if p.ctype.dtype.startswith(("float", "bfloat")):
        return float(str(value)) if p.ctype.dtype != "float64" else float(value)
    return int(value)


def buffer_dtype(p: Param) -> str:
    """A pointer parameter's element dtype: the source's, bytes for a type a spec cannot describe,
    64-bit words for a pointer to pointers."""
    if p.pointer > 1:
        return "uint64"
    return p.ctype.dtype if p.ctype is not None else "uint8"


def decode(raw: Path, out: Path, chosen: list[Chosen], root: Path, budget: Budget, launches_per_kernel: int
           ) -> tuple[list[dict[str, Any]], list[str], str]:
    """The manifest's launches, with their arrays written into `out`; what was left out; the device.
    CuoptError when nothing was captured or a kernel's layout does not match its source."""
    records, counts, omitted = read_raw(raw)
    _require(raw, records, chosen)
    names = demangle(sorted({r.mangled for r in records} | set(counts or {})))
    launches: list[dict[str, Any]] = []
    resolved: dict[str, Resolved] = {}
    for rec in records:
        if rec.mangled not in resolved:
            r = resolve(rec.mangled, names[rec.mangled], len(rec.params), chosen)
            check_layout(r, [int(p["size"]) for p in rec.params])
            resolved[rec.mangled] = r
        launch, notes = _launch(rec, resolved[rec.mangled], raw, out, root, budget)
        omitted.extend(notes)
        if launch is not None:
            launches.append(launch)
    if counts is None:
        omitted.append("launches after the captured ones were not counted: the program did not exit normally")
    else:
        for mangled, seen in sorted(counts.items()):
            taken = sum(r.mangled == mangled for r in records)
            if seen > taken and mangled in names:
                entry = resolved[mangled].entry if mangled in resolved else names[mangled]
                omitted.append(f"kernel {entry}: {seen - taken} more launches not captured "
                               f"(--launches {launches_per_kernel})")
    device = next((r.device for r in records if r.device), "")
    return launches, omitted, device


def _launch(rec: RawLaunch, r: Resolved, raw: Path, out: Path, root: Path, budget: Budget
            ) -> tuple[dict[str, Any] | None, list[str]]:
    notes: list[str] = []
    args: list[dict[str, Any]] = []
    label = f"{r.entry} launch {rec.ordinal}"
    for p, rp in zip(r.kernel.params, rec.params):
        data = bytes.fromhex(rp["hex"])
        if not p.pointer:
            if p.ctype is None or p.ctype.width != 1 or len(data) != itemsize(p.ctype.dtype):
                return None, [f"{label}: parameter {p.name} ({p.abi}) is not a scalar a capture can record; "
                              "launch left out"]
            args.append({"name": p.name, "kind": "scalar", "dtype": p.ctype.dtype, "value": scalar_value(p, data)})
            continue
        arg = _buffer(rec, p, rp, raw, out, budget, f"{_file_stem(r.entry)}.{rec.ordinal}.{p.name}")
        if arg["omitted"]:
            notes.append(f"{label}, {p.name}: {arg['omitted']}")
        args.append(arg)
    return {"source": os.path.relpath(r.chosen.path.resolve(), root.resolve()), "kernel": r.kernel.name,
            "entry": r.entry, "mangled": rec.mangled, "ordinal": rec.ordinal, "grid": list(rec.grid),
            "block": list(rec.block), "shared": rec.shared, "args": args}, notes


def _buffer(rec: RawLaunch, p: Param, rp: dict[str, Any], raw: Path, out: Path, budget: Budget,
            stem: str) -> dict[str, Any]:
    """A pointer argument: its allocation from the driver, its arrays sliced from the pointer to the
    allocation's end, or why they are left out."""
    dtype = buffer_dtype(p)
    arg: dict[str, Any] = {"name": p.name, "kind": "buffer", "dtype": dtype, "offset": 0, "allocation": 0,
                           "count": 0, "before": None, "after": None, "omitted": None}
    if "base" not in rp:
        pointer = int.from_bytes(bytes.fromhex(rp["hex"]), "little")
        arg["omitted"] = "null pointer" if pointer == 0 else \
            f"pointer {pointer:#x} is not device memory the driver knows ({rp.get('error', 'no attributes')})"
        return arg
    offset = int(rp["pointer"]) - int(rp["base"])
    extent = int(rp["extent"])
    count = (extent - offset) // itemsize(dtype)
    arg.update(offset=offset, allocation=extent, count=count)
    before = rp.get("before")
    after = rec.after.get(int(rp["allocation"]))
    if before is None:
        arg["omitted"] = f"over --max-bytes: {human(2 * extent)} asked for the allocation" \
            if rp.get("omitted") == "over --max-bytes" else "the copy before the launch failed (see the capture log)"
        return arg
    arg["omitted"] = budget.take(2 * count * itemsize(dtype))
    if arg["omitted"] is not None:
        return arg
    for which, name in (("before", before), ("after", after)):
        src = raw / name if name else None
        if src is None or not src.is_file() or src.stat().st_size < offset + count * itemsize(dtype):
            continue
        arg[which] = f"{stem}.{which}.npy"
        np.save(out / arg[which], np.fromfile(src, dtype=numpy_dtype(dtype), count=count, offset=offset))
    if arg["before"] is None:
        arg.update(after=None, omitted="the copy before the launch is damaged")
    elif arg["after"] is None:
        why = "the program ended during the launch" if rec.status is None else \
            f"the launch failed: {rec.status}" if rec.status != "ok" else "the copy after the launch is damaged"
        arg["omitted"] = f"contents after the launch not captured: {why}"
    return arg


def _require(raw: Path, records: list[RawLaunch], chosen: list[Chosen]) -> None:
    """CuoptError when the run captured nothing: the library never loaded, or none of the chosen
    kernels was launched."""
    if records:
        return
    kernels = ", ".join(sorted({c.kernel.name for c in chosen}))
    if not (raw / READY).is_file():
        detail = log_line(raw)
        raise CuoptError("the capture library was not loaded (the program never initialised CUDA"
                         f"{': ' + detail if detail else ''}); nothing captured")
    raise CuoptError(f"the program launched none of the chosen kernels ({kernels}); nothing captured")
