"""Reads a file written by `torch.save` without importing torch: the zip archive's pickle, restricted
to plain containers and tensors, each tensor coming back as a numpy array. This is what lets the
search use the learned policy at the cost of a numpy import instead of a torch import."""
from __future__ import annotations

import collections
import io
import pickle
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

# torch's legacy storage classes, as `torch.save` still names them, and the dtypes they hold
STORAGES: dict[str, str] = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16", "CharStorage": "int8",
    "ByteStorage": "uint8", "BoolStorage": "bool",
}


class CheckpointError(Exception):
    """The file is not a torch checkpoint this reader understands (the message says why)."""


def read(path: Path) -> Any:
    """The saved object, with tensors as numpy arrays; CheckpointError for anything else."""
    try:
        with zipfile.ZipFile(path) as archive:
            pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
            if len(pickles) != 1:
                raise CheckpointError("no data.pkl")
            prefix = pickles[0].rsplit("/", 1)[0]
            order = _byteorder(archive, prefix)
            return _Unpickler(io.BytesIO(archive.read(pickles[0])), archive, prefix, order).load()
    except (zipfile.BadZipFile, pickle.UnpicklingError, EOFError) as exc:
        raise CheckpointError(type(exc).__name__) from None
    except KeyError as exc:
        raise CheckpointError(f"missing {exc.args[0]}") from None


def _byteorder(archive: zipfile.ZipFile, prefix: str) -> str:
    try:
        order = archive.read(f"{prefix}/byteorder").decode().strip()
    except KeyError:
        return "<"  # files from before torch 1.11 record none; they were little-endian
    if order not in ("little", "big"):
        raise CheckpointError(f"byteorder {order!r}")
    return "<" if order == "little" else ">"


class _Storage:
    def __init__(self, dtype: str) -> None:
        self.dtype = dtype


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, archive: zipfile.ZipFile, prefix: str, order: str) -> None:
        super().__init__(file)
        self.archive, self.prefix, self.order = archive, prefix, order
        self.storages: dict[str, np.ndarray] = {}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor
        if module == "torch" and name in STORAGES:
            return _Storage(STORAGES[name])
        raise CheckpointError(f"{module}.{name} is not a tensor or a plain container")

    def persistent_load(self, pid: Any) -> np.ndarray:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _Storage)):
            raise CheckpointError(f"unknown storage reference {pid!r}")
        _, storage, key, _location, count = pid
        if key not in self.storages:
            dtype = np.dtype(storage.dtype).newbyteorder(self.order)
            data = np.frombuffer(self.archive.read(f"{self.prefix}/data/{key}"), dtype=dtype)
            if data.size != count:
                raise CheckpointError(f"storage {key} holds {data.size} elements, not {count}")
            self.storages[key] = data
        return self.storages[key]


def _rebuild_tensor(storage: np.ndarray, offset: int, size: tuple[int, ...], stride: tuple[int, ...],
                    *_rest: Any) -> np.ndarray:
    """A tensor's view of its storage, copied into a native-endian C-ordered array."""
    native = storage.dtype.newbyteorder("=")
    if any(n == 0 for n in size):
        return np.zeros(size, dtype=native)
    if offset < 0 or any(s < 0 for s in stride) or offset + sum((n - 1) * s for n, s in zip(size, stride)) >= storage.size:
        raise CheckpointError("a tensor reaches outside its storage")
    view = np.lib.stride_tricks.as_strided(storage[offset:], shape=size,
                                           strides=[s * storage.itemsize for s in stride], writeable=False)
    return np.array(view, dtype=native, order="C")  # a copy: its own, writeable array
