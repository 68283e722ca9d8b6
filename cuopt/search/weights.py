"""The safetensors file format with numpy alone: an 8-byte little-endian header length, a JSON
header naming each tensor's dtype, shape and byte range, then the tensors' raw little-endian,
C-ordered bytes. The learned policy's weights ship in it, so the search reads them without torch."""
from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np

DTYPES: dict[str, str] = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
                          "I8": "i1", "U8": "u1", "BOOL": "?"}
MAX_HEADER = 100 << 20  # bytes; a header longer than this is a damaged length, not a real file


class FormatError(ValueError):
    """The bytes are not a safetensors file this reader understands (the message says why)."""


def read(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of the file by name, each its own native-endian array."""
    data = path.read_bytes()
    if len(data) < 8:
        raise FormatError("shorter than a header length")
    (size,) = struct.unpack("<Q", data[:8])
    if size > min(MAX_HEADER, len(data) - 8):
        raise FormatError(f"header length {size} past the end of the file")
    try:
        header = json.loads(data[8:8 + size])
    except (UnicodeDecodeError, ValueError):
        raise FormatError("the header is not JSON") from None
    if not isinstance(header, dict):
        raise FormatError("the header is not a JSON object")
    body = memoryview(data)[8 + size:]
    return {name: _tensor(name, entry, body) for name, entry in header.items() if name != "__metadata__"}


def _tensor(name: str, entry: object, body: memoryview) -> np.ndarray:
    if not isinstance(entry, dict) or entry.get("dtype") not in DTYPES:
        dtype = entry.get("dtype") if isinstance(entry, dict) else None
        raise FormatError(f"{name}: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    if not (isinstance(shape, list) and all(isinstance(n, int) and n >= 0 for n in shape)):
        raise FormatError(f"{name}: shape {shape!r}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(n, int) for n in offsets)
            and 0 <= offsets[0] <= offsets[1] <= len(body)):
        raise FormatError(f"{name}: data_offsets {offsets!r} outside the {len(body)} bytes of data")
    dtype = np.dtype(DTYPES[entry["dtype"]])
    if offsets[1] - offsets[0] != math.prod(shape) * dtype.itemsize:
        raise FormatError(f"{name}: {offsets[1] - offsets[0]} bytes for shape {shape} of {entry['dtype']}")
    flat = np.frombuffer(body[offsets[0]:offsets[1]], dtype=dtype)
    return flat.astype(dtype.newbyteorder("=")).reshape(tuple(shape))  # a copy: its own, writeable array


def write(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """The tensors in safetensors form (the header padded with spaces to a multiple of 8 bytes)."""
    names = {np.dtype(v).str: k for k, v in DTYPES.items()}
    header: dict[str, object] = {}
    chunks: list[bytes] = []
    offset = 0
    for name, array in tensors.items():
        a = np.asarray(array, dtype=np.asarray(array).dtype.newbyteorder("<"))  # tobytes() is C-ordered
        if a.dtype.str not in names:
            raise FormatError(f"{name}: dtype {a.dtype} has no safetensors name")
        chunks.append(a.tobytes())
        header[name] = {"dtype": names[a.dtype.str], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(chunks[-1])]}
        offset += len(chunks[-1])
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(chunks))
