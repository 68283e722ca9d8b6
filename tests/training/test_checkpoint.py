"""The torch-free reader of `torch.save` files: what torch wrote comes back as numpy arrays equal to
torch's, views and shared storages included, and anything but tensors and plain containers is refused."""
from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import pytest
import torch

from cuopt.learn import checkpoint


def saved(tmp_path: Path, obj: object) -> Path:
    path = tmp_path / "c.pt"
    torch.save(obj, path)
    return path


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int64, torch.int32,
                                   torch.int16, torch.int8, torch.uint8, torch.bool])
def test_every_plain_dtype_reads_back_equal(tmp_path: Path, dtype: torch.dtype) -> None:
    tensor = (torch.arange(24) % 7).reshape(2, 3, 4).to(dtype)
    got = checkpoint.read(saved(tmp_path, {"t": tensor}))["t"]
    assert got.dtype == tensor.numpy().dtype and np.array_equal(got, tensor.numpy())


def test_views_share_storage_and_come_back_as_their_own_arrays(tmp_path: Path) -> None:
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    data = {"base": base, "transposed": base.t(), "row": base[1], "column": base[:, 2], "empty": torch.zeros(0, 5),
            "scalar": torch.tensor(2.5), "nested": collections.OrderedDict(a=[1, 2.0, "x", None, (True,)])}
    got = checkpoint.read(saved(tmp_path, data))
    for key in ("base", "transposed", "row", "column", "empty", "scalar"):
        assert got[key].shape == tuple(data[key].shape) and np.array_equal(got[key], data[key].numpy()), key
        assert got[key].flags.c_contiguous and got[key].flags.writeable, key
    assert got["nested"] == {"a": [1, 2.0, "x", None, (True,)]}


def test_anything_but_tensors_and_plain_containers_is_refused(tmp_path: Path) -> None:
    with pytest.raises(checkpoint.CheckpointError, match=r"^torch\.nn\.modules\.linear\.Linear is not a tensor"):
        checkpoint.read(saved(tmp_path, {"m": torch.nn.Linear(2, 2)}))
    with pytest.raises(checkpoint.CheckpointError, match=r"^torch\._utils\._rebuild_parameter is not"):
        checkpoint.read(saved(tmp_path, {"p": torch.nn.Parameter(torch.ones(2))}))
    text = tmp_path / "t.pt"
    text.write_text("not a zip")
    with pytest.raises(checkpoint.CheckpointError, match=r"^BadZipFile$"):
        checkpoint.read(text)
