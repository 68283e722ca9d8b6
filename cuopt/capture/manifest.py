"""A capture's manifest (`.cuopt/captures/<name>/manifest.json`, docs/capture.md): read and checked,
every problem one line naming the file and the key."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from cuopt.errors import CuoptError
from cuopt.spec.dtypes import DTYPES, is_float

FORMAT = 1
CAPTURES = Path(".cuopt") / "captures"
MANIFEST = "manifest.json"
KINDS = ("scalar", "buffer")


class CaptureError(CuoptError):
    """A capture that cannot be used: missing, damaged, or not of this source."""


@dataclass(frozen=True)
class CapturedArg:
    """One kernel argument of a captured launch: a scalar's value, or a buffer's arrays."""

    name: str
    kind: str  # scalar | buffer
    dtype: str
    value: Union[int, float, None] = None  # scalars
    offset: int = 0  # buffers: bytes from the allocation's base to the pointer
    allocation: int = 0  # the allocation's bytes
    count: int = 0  # elements captured from the pointer on
    before: Path | None = None  # the contents before the launch (None: left out)
    after: Path | None = None  # and after it
    omitted: str | None = None  # why the arrays were left out

    @property
    def buffer(self) -> bool:
        return self.kind == "buffer"


@dataclass(frozen=True)
class CapturedLaunch:
    """One launch of one kernel as the program made it."""

    source: str
    kernel: str
    entry: str  # as a spec's `kernel` key names it: `softmax<float, 256>`
    mangled: str
    ordinal: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    args: tuple[CapturedArg, ...]

    def arg(self, name: str) -> CapturedArg | None:
        return next((a for a in self.args if a.name == name), None)


@dataclass(frozen=True)
class Source:
    path: str  # relative to the directory that holds `.cuopt`
    sha256: str  # the file as the capture's data fits it: as captured, or as cuopt optimize last wrote it
    captured_sha256: str | None = None  # as captured, once cuopt optimize has rewritten it

    @property
    def accepted(self) -> tuple[str, ...]:
        """The hashes of the file that the captured data fits."""
        return (self.sha256,) if self.captured_sha256 is None else (self.sha256, self.captured_sha256)


@dataclass(frozen=True)
class Capture:
    directory: Path
    command: tuple[str, ...]
    cwd: str
    exit: int | None
    device: str
    sources: tuple[Source, ...]
    launches: tuple[CapturedLaunch, ...]
    omitted: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.directory.name

    @property
    def root(self) -> Path:
        """The directory the sources' paths are relative to (the one holding `.cuopt`)."""
        return self.directory.parent.parent.parent

    def launch(self, entry: str, ordinal: int = 0) -> CapturedLaunch | None:
        """The launch of `entry` (`scale<float, 256>`, spaces aside) of that ordinal."""
        same = "".join(entry.split())
        return next((la for la in self.launches if "".join(la.entry.split()) == same and la.ordinal == ordinal), None)


def captures_dir(near: Path) -> Path:
    """Where the captures of the sources in directory `near` live."""
    return near / CAPTURES


def available(near: Path) -> list[str]:
    """The names of the captures under `near`'s `.cuopt/captures`, sorted."""
    where = captures_dir(near)
    return sorted(d.name for d in where.iterdir() if (d / MANIFEST).is_file()) if where.is_dir() else []


def locate(name: str, near: Path) -> Path:
    """The directory of capture `name` (a name under `near`'s `.cuopt/captures`, or a path to a
    capture directory or its manifest); an error listing the captures there when there is none."""
    given = Path(name)
    if given.name == MANIFEST and given.is_file():
        return given.parent
    if given.is_dir() and (given / MANIFEST).is_file():
        return given
    candidate = captures_dir(near) / name
    if "/" not in name and candidate.is_dir():
        return candidate
    found = available(near)
    listed = f"captures there: {', '.join(found)}" if found else "none there: run `cuopt capture FILE.cu -- PROGRAM`"
    return _missing(f"no capture {name!r} in {captures_dir(near)} ({listed})")


def _missing(message: str) -> Path:
    raise CaptureError(message)


def load(directory: Path) -> Capture:
    """The capture in `directory`, its arrays' files checked (present, 1-D, of the dtype and count)."""
    path = directory / MANIFEST
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise CaptureError(f"{path}: missing; not a capture (or a damaged one): capture again") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CaptureError(f"{path}: not valid JSON ({exc}); the capture is damaged: capture again") from None
    r = _Reader(path)
    if not isinstance(raw, dict):
        r.fail("", "expected a JSON object")
    if raw.get("format") != FORMAT:
        r.fail("format", f"unknown format version {raw.get('format')!r}; this cuopt reads format {FORMAT}: "
                         "capture again with this cuopt")
    sources = tuple(_source(r, s, f"sources[{i}]") for i, s in enumerate(r.items(raw, "sources")))
    launches = tuple(_launch(r, la, f"launches[{i}]", directory) for i, la in enumerate(r.items(raw, "launches")))
    exit_code = raw.get("exit")
    if exit_code is not None and not _is_int(exit_code):
        r.fail("exit", "expected an integer or null")
    return Capture(directory, tuple(str(c) for c in r.items(raw, "command")), str(raw.get("cwd", "")), exit_code,
                   str(raw.get("device", "")), sources, launches,
                   tuple(str(o) for o in r.items(raw, "omitted", required=False)))


def _source(r: _Reader, raw: Any, where: str) -> Source:
    captured = raw.get("captured_sha256") if isinstance(raw, dict) else None
    return Source(r.string(raw, "path", where), r.string(raw, "sha256", where),
                  None if captured is None else r.string(raw, "captured_sha256", where))


def _launch(r: _Reader, raw: Any, where: str, directory: Path) -> CapturedLaunch:
    if not isinstance(raw, dict):
        r.fail(where, "expected an object")
    dims = {key: r.dims(raw, key, where) for key in ("grid", "block")}
    args = tuple(_arg(r, a, f"{where}.args[{i}]", directory) for i, a in enumerate(r.items(raw, "args", where)))
    return CapturedLaunch(r.string(raw, "source", where), r.string(raw, "kernel", where), r.string(raw, "entry", where),
                          r.string(raw, "mangled", where), r.count(raw, "ordinal", where), dims["grid"],
                          dims["block"], r.count(raw, "shared", where), args)


def _arg(r: _Reader, raw: Any, where: str, directory: Path) -> CapturedArg:
    if not isinstance(raw, dict):
        r.fail(where, "expected an object")
    name, kind, dtype = (r.string(raw, key, where) for key in ("name", "kind", "dtype"))
    if kind not in KINDS:
        r.fail(f"{where}.kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
    if dtype not in DTYPES:
        r.fail(f"{where}.dtype", f"unknown dtype {dtype!r}; expected one of {', '.join(DTYPES)}")
    if kind == "scalar":
        value = raw.get("value")
        integral = not is_float(dtype)
        if not (_is_int(value) if integral else isinstance(value, (int, float)) and not isinstance(value, bool)):
            r.fail(f"{where}.value", f"expected {'an integer' if integral else 'a number'} for a {dtype} scalar")
        return CapturedArg(name, kind, dtype, value)
    count = r.count(raw, "count", where)
    omitted = raw.get("omitted")
    if omitted is not None and not isinstance(omitted, str):
        r.fail(f"{where}.omitted", "expected a one-line reason or null")
    arrays = []
    for key in ("before", "after"):
        file = raw.get(key)
        if file is None:
            arrays.append(None)
            continue
        if not isinstance(file, str) or "/" in file or "\\" in file or file.startswith("."):
            r.fail(f"{where}.{key}", "expected the name of a .npy file in the capture's directory, or null")
        arrays.append(directory / file)
        problem = array_problem(directory / file, dtype, count)
        if problem:
            r.fail(f"{where}.{key}", f"{file}: {problem}; the capture is damaged: capture again")
    return CapturedArg(name, kind, dtype, None, r.count(raw, "offset", where), r.count(raw, "allocation", where),
                       count, arrays[0], arrays[1], omitted)


def array_problem(path: Path, dtype: str, count: int) -> str | None:
    """Why the .npy file at `path` is not `count` elements of `dtype` in one dimension (its header
    read, not its data); None when it is."""
    import numpy as np  # deferred: `cuopt check` and the spec's binding stay free of numpy until data is read

    try:
        with path.open("rb") as f:
            read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
            version = np.lib.format.read_magic(f)
            if version not in read:
                return f"a .npy file of version {version[0]}.{version[1]}, which this cuopt does not read"
            shape, _, found = read[version](f)  # the header alone
    except FileNotFoundError:
        return "missing"
    except (OSError, ValueError) as exc:
        return f"not a .npy file ({exc})"
    if not _same_dtype(found, dtype):
        return f"holds {found.name}, expected {dtype}"
    if shape != (count,):
        return f"has shape {shape}, expected ({count},)"
    return None


def _same_dtype(found: Any, dtype: str) -> bool:
    """bfloat16 arrays (ml_dtypes) are saved as 2-byte void records, which numpy reads back without a name."""
    if dtype == "bfloat16":
        return found.name == "bfloat16" or (found.kind == "V" and found.itemsize == 2)
    return found.name == dtype and found.isnative


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_source(capture: Capture, path: Path, data: bytes | None = None) -> None:
    """An error naming the file when the capture lists `path` with another hash (the program was
    captured from another version of it); a capture that does not list it says so too."""
    target = path.resolve()
    for s in capture.sources:
        if (capture.root / s.path).resolve() == target:
            text = data if data is not None else path.read_bytes()
            if sha256(text) not in s.accepted:
                since = "was taken" if s.captured_sha256 is None else \
                    "was taken and since cuopt optimize last wrote it after validating on that capture"
                raise CaptureError(f"{path}: changed since capture {capture.name!r} {since} (sha256 differs from "
                                   f"the manifest's); its data may not fit this source: capture again")
            return
    listed = ", ".join(s.path for s in capture.sources) or "none"
    raise CaptureError(f"{capture.directory / MANIFEST}: sources: capture {capture.name!r} was not taken from "
                       f"{path} (its sources: {listed})")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Reader:
    """Typed access to the manifest's keys: a wrong one is a CaptureError naming file and key."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, key: str, expected: str) -> Any:
        at = f" {key}" if key else ""
        raise CaptureError(f"{self.path}:{at}: {expected}")

    def value(self, raw: dict[str, Any], key: str, where: str) -> Any:
        if key not in raw:
            self.fail(_join(where, key), "missing")
        return raw[key]

    def string(self, raw: Any, key: str, where: str) -> str:
        if not isinstance(raw, dict):
            self.fail(where, "expected an object")
        value = self.value(raw, key, where)
        if not isinstance(value, str) or not value:
            self.fail(_join(where, key), "expected a non-empty string")
        return value

    def count(self, raw: dict[str, Any], key: str, where: str) -> int:
        value = self.value(raw, key, where)
        if not _is_int(value) or value < 0:
            self.fail(_join(where, key), "expected a non-negative integer")
        return value

    def dims(self, raw: dict[str, Any], key: str, where: str) -> tuple[int, int, int]:
        value = self.value(raw, key, where)
        if not isinstance(value, list) or len(value) != 3 or not all(_is_int(v) and v > 0 for v in value):
            self.fail(_join(where, key), "expected three positive integers [x, y, z]")
        return tuple(value)  # type: ignore[return-value]

    def items(self, raw: dict[str, Any], key: str, where: str = "", required: bool = True) -> list[Any]:
        if key not in raw and not required:
            return []
        value = self.value(raw, key, where)
        if not isinstance(value, list):
            self.fail(_join(where, key), "expected a list")
        return value


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key
