"""The safetensors reader and writer (numpy only): a file assembled by hand after the format's
description reads back as its arrays, every dtype round-trips, and a damaged file is a FormatError
naming what is wrong."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from cuopt.search import weights


def assembled(path: Path, header: dict[str, object], data: bytes) -> Path:
    """A file as the format describes it: the header's length (u64, little-endian), the header, the data."""
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    return path


def test_a_file_assembled_by_hand_reads_back_as_its_arrays(tmp_path: Path) -> None:
    data = struct.pack("<4f", 1.0, -2.0, 0.5, 3.25) + struct.pack("<3q", 7, -1, 1 << 40)
    header = {"__metadata__": {"format": "pt"},
              "w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
              "n": {"dtype": "I64", "shape": [3], "data_offsets": [16, 40]}}
    got = weights.read(assembled(tmp_path / "a.safetensors", header, data))
    assert set(got) == {"w", "n"}
    assert got["w"].dtype == np.float32 and got["w"].tolist() == [[1.0, -2.0], [0.5, 3.25]]
    assert got["n"].dtype == np.int64 and got["n"].tolist() == [7, -1, 1 << 40]
    got["w"][0, 0] = 9.0  # each array is its own, writeable copy


@pytest.mark.parametrize("dtype", ["<f8", "<f4", "<f2", "<i8", "<i4", "<i2", "i1", "u1", "?"])
def test_every_dtype_round_trips(tmp_path: Path, dtype: str) -> None:
    tensors = {"a": (np.arange(24) % 7).reshape(2, 3, 4).astype(dtype), "empty": np.zeros((0, 5), dtype=dtype),
               "scalar": np.array(1, dtype=dtype)}
    path = tmp_path / "t.safetensors"
    weights.write(path, tensors)
    (size,) = struct.unpack("<Q", path.read_bytes()[:8])
    assert size % 8 == 0  # the header is padded, so the data starts aligned
    got = weights.read(path)
    for name, array in tensors.items():
        assert got[name].dtype == array.dtype and got[name].shape == array.shape and np.array_equal(got[name], array)


def test_a_big_endian_array_is_written_little_endian(tmp_path: Path) -> None:
    path = tmp_path / "t.safetensors"
    weights.write(path, {"x": np.array([1.5, -2.0], dtype=">f4")})
    assert path.read_bytes().endswith(struct.pack("<2f", 1.5, -2.0))
    assert weights.read(path)["x"].tolist() == [1.5, -2.0]


def test_a_dtype_without_a_safetensors_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(weights.FormatError, match=r"^x: dtype complex64 has no safetensors name$"):
        weights.write(tmp_path / "t.safetensors", {"x": np.zeros(2, dtype=np.complex64)})


F32 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


@pytest.mark.parametrize("raw, message", [
    (b"\x10\x00", "shorter than a header length"),
    (struct.pack("<Q", 1 << 40) + b"{}", "header length 1099511627776 past the end of the file"),
    (struct.pack("<Q", 2) + b"{x", "the header is not JSON"),
    (struct.pack("<Q", 2) + b"[]", "the header is not a JSON object"),
])
def test_a_damaged_file_is_a_format_error(tmp_path: Path, raw: bytes, message: str) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(raw)
    with pytest.raises(weights.FormatError) as err:
        weights.read(path)
    assert str(err.value) == message


@pytest.mark.parametrize("entry, message", [
    ({**F32, "dtype": "BF16"}, "x: dtype 'BF16' is not one of F64, F32, F16, I64, I32, I16, I8, U8, BOOL"),
    ({**F32, "shape": [-2]}, "x: shape [-2]"),
    ({**F32, "data_offsets": [0, 16]}, "x: data_offsets [0, 16] outside the 8 bytes of data"),
    ({**F32, "data_offsets": [4, 0]}, "x: data_offsets [4, 0] outside the 8 bytes of data"),
    ({**F32, "shape": [3]}, "x: 8 bytes for shape [3] of F32"),
])
def test_a_damaged_tensor_entry_is_a_format_error(tmp_path: Path, entry: dict[str, object], message: str) -> None:
    path = assembled(tmp_path / "bad.safetensors", {"x": entry}, bytes(8))
    with pytest.raises(weights.FormatError) as err:
        weights.read(path)
    assert str(err.value) == message
