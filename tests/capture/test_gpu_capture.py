"""cuopt capture on real programs: the training-step sample built with the static and the shared
CUDA runtime, a program that aborts after its first launch, and the bad runs."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cuopt.capture import manifest
from tests.conftest import SAMPLES, requires_nvcc

pytestmark = [pytest.mark.gpu, requires_nvcc]

TRAINSTEP = SAMPLES / "programs" / "trainstep"
DATA = Path(__file__).parent / "data"
B, T, C, NH = 4, 48, 72, 4  # trainstep.cfg


def _nvcc(out: Path, source: Path, *flags: str) -> None:
    subprocess.run(["nvcc", "-O3", "-std=c++17", "-arch=native", *flags, "-o", str(out), str(source)],
                   check=True, timeout=300)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("programs")
    for f in (TRAINSTEP / "trainstep.cu", TRAINSTEP / "trainstep.cfg", DATA / "crash.cu"):
        shutil.copy(f, d)
    _nvcc(d / "ts_static", d / "trainstep.cu")
    _nvcc(d / "ts_shared", d / "trainstep.cu", "-cudart", "shared")
    _nvcc(d / "crash", d / "crash.cu")
    return d


def capture(work: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "cuopt", "capture", *args], cwd=work, capture_output=True,
                          timeout=300)


@pytest.mark.parametrize("runtime", ["static", "shared"])
def test_trainstep_captured_with_output_unchanged(work: Path, runtime: str) -> None:
    plain = subprocess.run([f"./ts_{runtime}", "trainstep.cfg"], cwd=work, capture_output=True, timeout=120)
    got = capture(work, "trainstep.cu", "-n", "2", "--name", runtime, "--", f"./ts_{runtime}", "trainstep.cfg")
    assert got.returncode == 0, got.stderr.decode()
    assert got.stdout == plain.stdout and plain.stdout.startswith(b"trainstep: B=4")
    cap = manifest.load(work / ".cuopt" / "captures" / runtime)
    assert cap.exit == 0 and cap.device and cap.command == (f"./ts_{runtime}", "trainstep.cfg")
    entries = sorted({(la.entry, la.ordinal) for la in cap.launches})
    assert len(cap.launches) == 14 and len(entries) == 14  # 7 kernels, 2 steps, each launch once
    assert not [o for o in cap.omitted if "more launches" in o]

    att = cap.launch("attention_query_key_kernel")
    assert att.grid == (-(-T * T // 256), B * NH, 1) and att.block == (256, 1, 1)
    scalars = {a.name: a.value for a in att.args if not a.buffer}
    assert scalars == {"T": T, "C": C, "NH": NH, "scale": pytest.approx(1 / np.sqrt(C // NH), rel=1e-6)}
    assert np.float32(scalars["scale"]) == np.float32(1) / np.sqrt(np.float32(C // NH))  # the float32 it was
    mm = cap.launch("matmul_forward_kernel<16>")
    assert mm.kernel == "matmul_forward_kernel" and mm.grid == (-(-3 * C // 16), B * T // 16, 1)
    assert mm.block == (16, 16, 1) and mm.arg("OC").value == 3 * C
    for ordinal in (0, 1):
        adam = cap.launch("adamw_kernel", ordinal)
        assert adam.arg("num_parameters").value == 3 * C * C
        assert np.float32(adam.arg("learning_rate").value) == np.float32(3e-4)
        assert adam.arg("beta1_correction").value == pytest.approx(1 - 0.9 ** (ordinal + 1), rel=1e-6)
        assert adam.arg("params").after is not None

    enc = cap.launch("encoder_forward_kernel")
    tokens, wte, wpe = (np.load(enc.arg(n).before) for n in ("tokens", "wte", "wpe"))
    out = np.load(enc.arg("out").after)
    expect = (wte.reshape(-1, C)[tokens[:B * T]] + wpe.reshape(-1, C)[np.arange(B * T) % T]).reshape(-1)
    assert np.array_equal(out, expect)
    assert enc.arg("out").count == B * T * C and enc.arg("out").allocation == B * T * C * 4


def test_launches_beyond_n_are_counted_and_said(work: Path) -> None:
    got = capture(work, "trainstep.cu", "-k", "softmax_forward_kernel", "--name", "one", "--", "./ts_static",
                  "trainstep.cfg")
    assert got.returncode == 0, got.stderr.decode()
    cap = manifest.load(work / ".cuopt" / "captures" / "one")
    assert [la.entry for la in cap.launches] == ["softmax_forward_kernel"]
    assert "kernel softmax_forward_kernel: 1 more launches not captured (--launches 1)" in cap.omitted
    assert b"left out: kernel softmax_forward_kernel: 1 more launches" in got.stderr


def test_max_bytes_is_kept_and_what_is_over_said(work: Path) -> None:
    got = capture(work, "trainstep.cu", "--max-bytes", "64K", "--name", "small", "--", "./ts_static", "trainstep.cfg")
    assert got.returncode == 0, got.stderr.decode()
    cap = manifest.load(work / ".cuopt" / "captures" / "small")
    data = sum(f.stat().st_size - 128 for f in cap.directory.glob("*.npy"))
    assert data <= 64 * 1024
    assert [o for o in cap.omitted if "over --max-bytes" in o]
    assert all(a.omitted for la in cap.launches for a in la.args if a.buffer and a.before is None)


def test_a_program_that_aborts_keeps_its_first_launch(work: Path) -> None:
    got = capture(work, "crash.cu", "--", "./crash")
    assert got.returncode == 134 and got.stdout == b"filled\n"
    assert b"the program exited with status -6" in got.stderr
    cap = manifest.load(work / ".cuopt" / "captures" / "crash")
    (fill,) = cap.launches
    assert cap.exit == -6 and fill.arg("value").value == 2.5 and fill.arg("n").value == 1000
    assert np.array_equal(np.load(fill.arg("out").after), 2.5 + np.arange(1000, dtype=np.float32))
    assert any("did not exit normally" in o for o in cap.omitted)


def test_a_program_without_the_chosen_kernels_writes_nothing(work: Path) -> None:
    got = capture(work, "crash.cu", "--name", "none", "--", "./ts_static", "trainstep.cfg")
    assert got.returncode == 1
    assert got.stderr.decode().splitlines()[-1] == (
        "cuopt: error: the program launched none of the chosen kernels (fill); nothing captured")
    assert not (work / ".cuopt" / "captures" / "none").exists()


def test_a_source_that_does_not_match_the_program(work: Path) -> None:
    other = work / "other"
    other.mkdir(exist_ok=True)
    (other / "crash.cu").write_text("__global__ void fill(float* out, int n) { out[n] = 0; }\n")
    got = capture(work, "other/crash.cu", "--", "./crash")
    line = got.stderr.decode().splitlines()[-1]
    assert got.returncode == 1 and line.startswith("cuopt: error: other/crash.cu:1: kernel fill: the program's "
                                                   "kernel takes 3 parameters, the source's signature 2")
    assert not (other / ".cuopt" / "captures" / "crash").exists()


def test_optimize_on_the_captured_training_step_validates_on_its_data(work: Path, tmp_path: Path) -> None:
    """The whole workflow on the training step: capture writes a spec with no TODO, optimize runs every
    kernel on the captured data (no original that fails to validate against itself, at least one
    variant written), and bench on the written file validates every kernel on that capture."""
    for f in ("trainstep.cu", "trainstep.cfg", "ts_static"):
        shutil.copy(work / f, tmp_path)
    got = capture(tmp_path, "trainstep.cu", "--", "./ts_static", "trainstep.cfg")
    assert got.returncode == 0, got.stderr.decode()
    assert b"0 TODOs to check" in got.stderr, got.stderr.decode()
    opt = subprocess.run([sys.executable, "-m", "cuopt", "optimize", "trainstep.cu", "--budget", "2m", "--json",
                          "--no-diff"], cwd=tmp_path, capture_output=True, timeout=540)
    assert opt.returncode == 0, opt.stderr.decode()[-3000:]
    summaries = json.loads(opt.stdout)
    assert len(summaries) == 7 and not [s for s in summaries if s["status"] == "error"], summaries
    assert any(s["status"] == "written" for s in summaries), [(s["kernel"], s["message"]) for s in summaries]
    bench = subprocess.run([sys.executable, "-m", "cuopt", "bench", "trainstep.cu", "--json"], cwd=tmp_path,
                           capture_output=True, timeout=300)
    assert bench.returncode == 0, bench.stderr.decode()[-3000:]
    rows = json.loads(bench.stdout)
    assert {r["status"] for r in rows} == {"ok"} and {r.get("capture") for r in rows} == {"trainstep"}, rows
