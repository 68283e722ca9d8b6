"""Raw injection records -> manifest launches: scalars by the source's types, buffers sliced from
their allocation, the mangled name's kernel and instantiation, --max-bytes, and what is left out."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from cuopt.capture import manifest, records
from cuopt.capture.kernels import check_layout, choose, environment_value, resolve
from cuopt.errors import CuoptError
from cuopt.targets import read_source
from tests.conftest import SAMPLES

TRAINSTEP = SAMPLES / "programs" / "trainstep" / "trainstep.cu"
ATTENTION = "_Z26attention_query_key_kernelPfPKfiiif"
MATMUL = "_Z21matmul_forward_kernelILi16EEvPfPKfS2_S2_iii"
ADAMW = "_Z12adamw_kernelPfPKfS_S_lfffffff"


class Raw:
    """Writes launch records as the injection library does."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / records.READY).write_text("")
        self.seq = 0

    def launch(self, mangled: str, params: list[tuple[str, object]], grid=(1, 1, 1), block=(32, 1, 1),
               ordinal: int = 0, allocations: dict[int, tuple[np.ndarray, np.ndarray | None]] | None = None,
               exit_status: str | None = "ok") -> None:
        """params: ("ptr", (allocation index, byte offset)) | ("i32"/"i64"/"f32", value) | ("null", 0)."""
        allocations = allocations or {}
        seq, self.seq = self.seq, self.seq + 1
        out, offset, after = [], 0, []
        for kind, value in params:
            size = 4 if kind in ("i32", "f32") else 8
            offset = (offset + size - 1) // size * size
            rec: dict[str, object] = {"offset": offset, "size": size}
            if kind == "ptr":
                k, byte_offset = value
                base = 0x7f0000000000 + 0x10000000 * k
                rec.update(pointer=base + byte_offset, base=base, extent=allocations[k][0].nbytes, allocation=k)
                rec["hex"] = struct.pack("<Q", base + byte_offset).hex()
                before_name = f"{seq}.{k}.before.bin"
                allocations[k][0].tofile(self.dir / before_name)
                rec["before"] = before_name
                if allocations[k][1] is not None and {"allocation": k} not in [{"allocation": a["allocation"]} for a in after]:
                    after_name = f"{seq}.{k}.after.bin"
                    allocations[k][1].tofile(self.dir / after_name)
                    after.append({"allocation": k, "file": after_name})
            elif kind == "null":
                rec.update(hex="00" * 8, error="CUDA_ERROR_INVALID_VALUE")
            else:
                fmt = {"i32": "<i", "i64": "<q", "f32": "<f"}[kind]
                rec["hex"] = struct.pack(fmt, value).hex()
            out.append(rec)
            offset += size
        enter = {"phase": "enter", "seq": seq, "mangled": mangled, "ordinal": ordinal, "grid": list(grid),
                 "block": list(block), "shared": 0, "device": "Test GPU", "params": out}
        with open(self.dir / records.LAUNCHES, "a") as f:
            f.write(json.dumps(enter) + "\n")
            if exit_status is not None:
                f.write(json.dumps({"phase": "exit", "seq": seq, "status": exit_status, "after": after}) + "\n")

    def counts(self, counts: dict[str, int]) -> None:
        (self.dir / records.COUNTS).write_text(json.dumps(counts))


@pytest.fixture
def chosen():
    return choose({TRAINSTEP: read_source(TRAINSTEP)}, [])


def scalars(ln: dict) -> dict:
    return {a["name"]: a["value"] for a in ln["args"] if a["kind"] == "scalar"}


def arg(ln: dict, name: str) -> dict:
    return next(a for a in ln["args"] if a["name"] == name)


def _decode(tmp_path: Path, chosen, limit: int = 1 << 30, launches: int = 1):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    taken, omitted, device = records.decode(tmp_path / "raw", out, chosen, TRAINSTEP.parent,
                                            records.Budget(limit), launches)
    return out, taken, omitted, device


def test_attention_launch_decoded_by_the_source(tmp_path: Path, chosen) -> None:
    qkv = np.arange(4 * 8 * 3 * 16, dtype=np.float32)
    preatt = np.zeros(4 * 2 * 8 * 8 + 32, dtype=np.float32)
    raw = Raw(tmp_path / "raw")
    raw.launch(ATTENTION, [("ptr", (0, 128)), ("ptr", (1, 0)), ("i32", 8), ("i32", 16), ("i32", 2),
                           ("f32", 1 / np.sqrt(np.float32(8)))], grid=(1, 8, 1), block=(256, 1, 1),
               allocations={0: (preatt, preatt + 1), 1: (qkv, qkv)})
    raw.counts({ATTENTION: 1})
    out, taken, omitted, device = _decode(tmp_path, chosen)
    assert device == "Test GPU" and omitted == []
    (ln,) = taken
    assert [ln[k] for k in ("kernel", "entry", "source", "grid", "block")] == [
        "attention_query_key_kernel", "attention_query_key_kernel", "trainstep.cu", [1, 8, 1], [256, 1, 1]]
    assert scalars(ln) == {"T": 8, "C": 16, "NH": 2, "scale": pytest.approx(0.35355339)}
    assert np.float32(scalars(ln)["scale"]) == np.float32(1 / np.sqrt(np.float32(8)))
    out_arg = arg(ln, "preatt")
    assert [out_arg[k] for k in ("dtype", "offset", "allocation", "count")] == [
        "float32", 128, preatt.nbytes, preatt.size - 32]
    assert np.array_equal(np.load(out / out_arg["before"]), preatt[32:])
    assert np.array_equal(np.load(out / out_arg["after"]), preatt[32:] + 1)
    assert np.array_equal(np.load(out / arg(ln, "qkv")["before"]), qkv)


def test_template_instantiation_from_the_mangled_name(tmp_path: Path, chosen) -> None:
    a = np.ones(64, dtype=np.float32)
    raw = Raw(tmp_path / "raw")
    raw.launch(MATMUL, [("ptr", (0, 0)), ("ptr", (1, 0)), ("ptr", (2, 0)), ("null", 0), ("i32", 4), ("i32", 4),
                        ("i32", 4)], allocations={0: (a, a), 1: (a, a), 2: (a, a)})
    raw.counts({MATMUL: 3})
    out, taken, omitted, _ = _decode(tmp_path, chosen)
    (ln,) = taken
    assert [ln[k] for k in ("kernel", "entry", "mangled")] == ["matmul_forward_kernel", "matmul_forward_kernel<16>",
                                                               MATMUL]
    bias = arg(ln, "bias")
    assert [bias[k] for k in ("count", "before", "after", "omitted")] == [0, None, None, "null pointer"]
    assert "kernel matmul_forward_kernel<16>: 2 more launches not captured (--launches 1)" in omitted
    assert any("bias: null pointer" in o for o in omitted)


def _adamw(raw: Raw, n: int, ordinal: int = 0, exit_status: str | None = "ok") -> None:
    p = np.full(n, 0.5, dtype=np.float32)
    raw.launch(ADAMW, [("ptr", (0, 0)), ("ptr", (1, 0)), ("ptr", (2, 0)), ("ptr", (3, 0)), ("i64", n),
                       ("f32", 3e-4), ("f32", 0.9), ("f32", 0.999), ("f32", 0.1), ("f32", 0.001),
                       ("f32", 1e-8), ("f32", 0.0)], ordinal=ordinal,
               allocations={k: (p, p - 0.25) for k in range(4)}, exit_status=exit_status)


def test_scalars_keep_their_float32_values(tmp_path: Path, chosen) -> None:
    raw = Raw(tmp_path / "raw")
    _adamw(raw, 16)
    raw.counts({ADAMW: 1})
    _, (ln,), _, _ = _decode(tmp_path, chosen)
    assert scalars(ln)["num_parameters"] == 16 and isinstance(scalars(ln)["num_parameters"], int)
    assert scalars(ln)["learning_rate"] == 0.0003 and scalars(ln)["beta2_correction"] == 0.001


def test_max_bytes_leaves_out_what_is_over_and_says_so(tmp_path: Path, chosen) -> None:
    raw = Raw(tmp_path / "raw")
    _adamw(raw, 256)  # four buffers of 1 KiB, 2 KiB each with before and after
    raw.counts({ADAMW: 1})
    out, (ln,), omitted, _ = _decode(tmp_path, chosen, limit=5000)
    kept = [a["name"] for a in ln["args"] if a["kind"] == "buffer" and a["before"] is not None]
    left = [a for a in ln["args"] if a["kind"] == "buffer" and a["before"] is None]
    assert kept == ["params", "grads"] and [a["name"] for a in left] == ["m", "v"]
    assert left[0]["omitted"] == "over --max-bytes: 2 KiB asked, 904 B left"
    assert sum(f.stat().st_size - 128 for f in out.glob("*.npy")) <= 5000  # npy headers are 128 bytes
    assert len([o for o in omitted if "over --max-bytes" in o]) == 2


def test_a_program_that_crashed_keeps_what_was_captured(tmp_path: Path, chosen) -> None:
    raw = Raw(tmp_path / "raw")
    _adamw(raw, 8, exit_status=None)  # no exit record, no counts: the program died during the launch
    with open(raw.dir / records.LAUNCHES, "a") as f:
        f.write('{"phase":"enter","seq":1,"mang')
    out, (ln,), omitted, _ = _decode(tmp_path, chosen)
    params = arg(ln, "params")
    assert params["before"] is not None and params["after"] is None
    assert params["omitted"] == "contents after the launch not captured: the program ended during the launch"
    assert "launches after the captured ones were not counted: the program did not exit normally" in omitted
    assert any("cut short" in o for o in omitted)


def test_layout_mismatch_is_one_line_naming_the_kernel(chosen) -> None:
    r = resolve(ATTENTION, "attention_query_key_kernel(float*, float const*, int, int, int, float)", 6, chosen)
    check_layout(r, [8, 8, 4, 4, 4, 4])
    with pytest.raises(CuoptError, match=r"trainstep.cu:\d+: kernel attention_query_key_kernel: the program's "
                                         r"kernel takes 5 parameters, the source's signature 6"):
        check_layout(r, [8, 8, 4, 4, 4])
    with pytest.raises(CuoptError, match=r"parameter scale \(float\) is 8 bytes in the program, 4 in the source"):
        check_layout(r, [8, 8, 4, 4, 4, 8])


def test_mismatch_from_raw_records(tmp_path: Path, chosen) -> None:
    raw = Raw(tmp_path / "raw")
    raw.launch(ATTENTION, [("ptr", (0, 0)), ("i32", 8)], allocations={0: (np.zeros(4, np.float32), None)})
    with pytest.raises(CuoptError, match="not built from this source"):
        _decode(tmp_path, chosen)


def test_nothing_captured(tmp_path: Path, chosen) -> None:
    raw = Raw(tmp_path / "raw")
    raw.counts({})
    with pytest.raises(CuoptError, match=r"^the program launched none of the chosen kernels \(adamw_kernel, "):
        _decode(tmp_path, chosen)
    (raw.dir / records.READY).unlink()
    (raw.dir / records.LOG).write_text("cuptiSubscribe failed: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES\n")
    with pytest.raises(CuoptError, match="capture library was not loaded .*INSUFFICIENT_PRIVILEGES"):
        _decode(tmp_path, chosen)


def test_kernels_for_the_injection_library(chosen) -> None:
    value = environment_value([c for c in chosen if c.kernel.name in ("adamw_kernel", "softmax_forward_kernel")])
    assert value == "softmax_forward_kernel=0,1;adamw_kernel=0,1,2,3"


def test_decoded_launches_read_back_through_the_manifest_reader(tmp_path: Path, chosen) -> None:
    raw = Raw(tmp_path / "raw")
    _adamw(raw, 8)
    raw.counts({ADAMW: 1})
    out, taken, omitted, device = _decode(tmp_path, chosen)
    obj = {"format": manifest.FORMAT, "command": ["./p"], "cwd": "/", "exit": 0, "device": device,
           "sources": [{"path": "trainstep.cu", "sha256": "0" * 64}], "launches": taken, "omitted": omitted}
    (out / manifest.MANIFEST).write_text(json.dumps(obj))
    (ln,) = manifest.load(out).launches
    m = ln.arg("m")
    assert np.array_equal(np.load(m.after), np.full(8, 0.25, dtype=np.float32))
    assert ln.arg("learning_rate").value == 0.0003


def test_allocations_the_library_left_out(tmp_path: Path, chosen) -> None:
    """The library copies nothing over its budget (and says so), or logs a copy that failed."""
    raw = Raw(tmp_path / "raw")
    _adamw(raw, 8)
    raw.counts({ADAMW: 1})
    path = raw.dir / records.LAUNCHES
    enter, exit_ = (json.loads(line) for line in path.read_text().splitlines())
    for p, why in zip(enter["params"][:2], ("over --max-bytes", "copy failed")):
        del p["before"]
        p["omitted"] = why
    path.write_text(json.dumps(enter) + "\n" + json.dumps(exit_) + "\n")
    _, (ln,), omitted, _ = _decode(tmp_path, chosen)
    assert arg(ln, "params")["omitted"] == "over --max-bytes: 64 B asked for the allocation"
    assert arg(ln, "grads")["omitted"] == "the copy before the launch failed (see the capture log)"
    assert arg(ln, "params")["before"] is None and arg(ln, "params")["count"] == 8
    assert arg(ln, "m")["before"] is not None
