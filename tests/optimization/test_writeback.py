"""Atomic writes (content, mode, nothing half-written or left behind on failure) and editing a
spec's launch in place."""
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from cuopt.errors import CuoptError
from cuopt.spec import expr as E
from cuopt.spec.edit import set_launch
from cuopt.spec.model import Launch, parse as parse_spec
from cuopt.writeback import write_atomic

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# -- write_atomic ---------------------------------------------------------------------------------------------

def test_write_atomic_replaces_the_content(tmp_path: Path) -> None:
    path = tmp_path / "k.cu"
    path.write_bytes(b"old content that is longer than the new one\n")
    write_atomic(path, b"new\n")
    assert path.read_bytes() == b"new\n"
    assert listing(tmp_path) == ["k.cu"]


@pytest.mark.parametrize("bits", [0o640, 0o755, 0o600])
def test_write_atomic_keeps_the_file_mode(tmp_path: Path, bits: int) -> None:
    path = tmp_path / "k.cu"
    path.write_bytes(b"old")
    path.chmod(bits)
    write_atomic(path, b"new")
    assert mode(path) == bits
    assert path.read_bytes() == b"new"


def test_write_atomic_creates_a_new_file(tmp_path: Path) -> None:
    path = tmp_path / "new.cu"
    write_atomic(path, b"fresh")
    assert path.read_bytes() == b"fresh"
    assert listing(tmp_path) == ["new.cu"]


def test_a_file_in_a_missing_directory_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(CuoptError, match=r"missing/k\.cu: cannot write: No such file or directory$"):
        write_atomic(tmp_path / "missing" / "k.cu", b"x")


def test_a_new_file_gets_the_usual_mode(tmp_path: Path) -> None:
    """`--out other.cu` writes a new file: it should be readable like any file the user creates
    (0o666 less the umask), not private to the owner like a temporary file (0o600)."""
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "new.cu", b"fresh")
        (tmp_path / "plain.cu").write_bytes(b"fresh")
    finally:
        os.umask(old)
    assert mode(tmp_path / "new.cu") == mode(tmp_path / "plain.cu") == 0o644


@pytest.mark.parametrize("error", [OSError("rename failed"), KeyboardInterrupt()])
def test_a_failed_rename_keeps_the_original_and_leaves_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    error: BaseException) -> None:
    path = tmp_path / "k.cu"
    path.write_bytes(b"original\n")

    def fail(src: Any, dst: Any) -> None:
        raise error

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(type(error)):
        write_atomic(path, b"replacement\n")
    assert path.read_bytes() == b"original\n"
    assert listing(tmp_path) == ["k.cu"]


def test_a_write_that_fails_midway_keeps_the_original_and_leaves_no_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "k.cu"
    path.write_bytes(b"original\n")
    real_fdopen = os.fdopen
    written: list[bytes] = []

    class HalfWriter:
        """Writes half of the data, then the disk is full."""

        def __init__(self, f: Any) -> None:
            self.f = f

        def __enter__(self) -> HalfWriter:
            return self

        def __exit__(self, *exc: Any) -> None:
            self.f.close()

        def write(self, data: bytes) -> int:
            self.f.write(data[: len(data) // 2])
            self.f.flush()
            written.append(data[: len(data) // 2])
            raise OSError(28, "No space left on device")

        def __getattr__(self, name: str) -> Any:
            return getattr(self.f, name)

    monkeypatch.setattr(os, "fdopen", lambda fd, *a, **k: HalfWriter(real_fdopen(fd, *a, **k)))
    with pytest.raises(OSError, match="No space left on device"):
        write_atomic(path, b"a much longer replacement\n")
    assert written == [b"a much longer"]
    assert path.read_bytes() == b"original\n"
    assert listing(tmp_path) == ["k.cu"]


def test_a_failed_fsync_keeps_the_original(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "k.cu"
    path.write_bytes(b"original\n")

    def fail(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="Input/output error"):
        write_atomic(path, b"replacement\n")
    assert path.read_bytes() == b"original\n"
    assert listing(tmp_path) == ["k.cu"]


# -- set_launch -------------------------------------------------------------------------------------------------

SPEC = """\
# saxpy, tuned by hand
[saxpy]  # the kernel
block = [256]  # threads per block
grid = ["cdiv(n, block.x)"]
sizes = { n = 1024 }
seed = 3

[saxpy.args]
n = "n"
a = 2.5
x = "in float32[n]"
y = "inout float32[n]"

[other]
block = [256]
grid = ["cdiv(n, block.x)"]
sizes = { n = 64 }

[other.args]
n = "n"
x = "inout float32[n]"
"""


def launch(block: tuple[int, ...], *grid: str, shared: str = "0") -> Launch:
    return Launch(block, tuple(E.parse(g) for g in grid), E.parse(shared))


def parsed(text: str, kernel: str) -> Launch:
    return parse_spec(tomllib.loads(text), Path("k.cuopt.toml")).kernels[kernel].launch


def test_set_launch_replaces_block_and_grid_and_keeps_the_rest() -> None:
    new = launch((128,), "cdiv(n, block.x * 4)")
    out = set_launch(SPEC, "saxpy", new)
    assert out == SPEC.replace("block = [256]  # threads per block", "block = [128]  # threads per block").replace(
        'grid = ["cdiv(n, block.x)"]\nsizes = { n = 1024 }', f'grid = ["{new.grid[0]}"]\nsizes = {{ n = 1024 }}')
    assert parsed(out, "saxpy") == new
    assert parsed(out, "other") == parsed(SPEC, "other")
    assert tomllib.loads(out)["saxpy"]["sizes"] == {"n": 1024}


def test_set_launch_leaves_other_kernels_alone() -> None:
    out = set_launch(SPEC, "other", launch((64,), "cdiv(n, block.x)"))
    assert out.split("[other]")[0] == SPEC.split("[other]")[0]
    assert "[other]\nblock = [64]\n" in out
    assert parsed(out, "saxpy") == parsed(SPEC, "saxpy")


def test_set_launch_replaces_multi_line_arrays() -> None:
    text = """\
[stencil]
block = [
    16,
    16,
]
grid = [
    "cdiv(w, block.x)",
    "cdiv(h, block.y)",
]  # one thread per point
sizes = { w = 64, h = 32 }

[stencil.args]
w = "w"
h = "h"
out = "out float32[w*h]"
"""
    new = launch((32, 8), "cdiv(w, 32)", "cdiv(h, 32)")
    out = set_launch(text, "stencil", new)
    assert out == """\
[stencil]
block = [32, 8]
grid = ["cdiv(w, 32)", "cdiv(h, 32)"]  # one thread per point
sizes = { w = 64, h = 32 }

[stencil.args]
w = "w"
h = "h"
out = "out float32[w*h]"
"""
    assert parsed(out, "stencil") == new


def test_set_launch_adds_shared_only_when_it_is_not_zero() -> None:
    with_shared = set_launch(SPEC, "saxpy", launch((256,), "cdiv(n, block.x)", shared="block.x * 4"))
    assert with_shared.count("shared") == 1
    assert "[saxpy]  # the kernel\nshared = \"block.x * 4\"\n" in with_shared
    assert parsed(with_shared, "saxpy").shared == E.parse("block.x * 4")
    assert set_launch(SPEC, "saxpy", launch((256,), "cdiv(n, block.x)")) == SPEC


def test_set_launch_removes_a_shared_size_that_became_zero() -> None:
    text = SPEC.replace('grid = ["cdiv(n, block.x)"]\nsizes = { n = 1024 }',
                        'grid = ["cdiv(n, block.x)"]\nshared = "block.x * 4"  # one float per thread\n'
                        'sizes = { n = 1024 }')
    out = set_launch(text, "saxpy", launch((256,), "cdiv(n, block.x)"))
    assert out == SPEC
    assert parsed(out, "saxpy").shared == E.Num(0)


def test_set_launch_adds_missing_keys_after_the_header() -> None:
    text = '[k]\nsizes = { n = 10 }\n\n[k.args]\nn = "n"\nx = "inout float32[n]"\n'
    out = set_launch(text, "k", launch((32,), "cdiv(n, block.x)"))
    assert out.startswith('[k]\nblock = [32]\ngrid = ["cdiv(n, block.x)"]\nsizes = { n = 10 }\n')
    assert parsed(out, "k") == launch((32,), "cdiv(n, block.x)")


def test_set_launch_needs_the_kernels_table() -> None:
    with pytest.raises(ValueError, match=r"no \[missing\] table"):
        set_launch(SPEC, "missing", launch((32,), "1"))
