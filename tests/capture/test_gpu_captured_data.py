"""Validation on captured data on a real GPU: a variant right on random inputs but wrong on the
program's own data is rejected; the original passes and is timed on the captured data."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from cuopt.capture.to_spec import specs_from_capture
from cuopt.cli import app
from cuopt.evaluate.evaluator import KernelEvaluator, TimingOptions, Variant
from cuopt.targets import collect

pytestmark = pytest.mark.gpu

HERE = Path(__file__).parent
ROWS, COLS = 300, 256
# a guard against overflow that only real data reaches: logits clamped at 80 before the exponential.
# Bit for bit the original on logits near zero (the random inputs); wrong on the large logits a
# trained model produces (the captured ones reach 120)
CLAMPED = ("expf(x[k] - mx)", "expf(fminf(x[k], 80.0f) - mx)")


def capture_softmax(root: Path) -> Path:
    """softmax_rows.cu in `root` and a capture of its launch on logits up to 120, its output computed here."""
    source = root / "softmax_rows.cu"
    shutil.copy(HERE / source.name, source)
    directory = root / ".cuopt" / "captures" / "softmax_rows"
    directory.mkdir(parents=True)
    rng = np.random.default_rng(3)
    logits = rng.uniform(-100.0, 120.0, (ROWS, COLS)).astype(np.float32)
    x = logits.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    probs = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    poison = np.full(ROWS * COLS, np.nan, np.float32)
    np.save(directory / "out.before.npy", poison)
    np.save(directory / "out.after.npy", probs.ravel())
    np.save(directory / "logits.npy", logits.ravel())
    nbytes = ROWS * COLS * 4

    def buffer(name: str, before: str, after: str) -> dict:
        return {"name": name, "kind": "buffer", "dtype": "float32", "offset": 0, "allocation": nbytes,
                "count": ROWS * COLS, "before": before, "after": after, "omitted": None}

    manifest = {
        "format": 1, "cuopt": "0", "created": "2026-01-01T00:00:00Z", "command": ["./softmax_rows", "300", "256"],
        "cwd": str(root), "exit": 0, "device": "",
        "sources": [{"path": source.name, "sha256": hashlib.sha256(source.read_bytes()).hexdigest()}],
        "launches": [{"source": source.name, "kernel": "softmax_rows", "entry": "softmax_rows",
                      "mangled": "_Z12softmax_rowsPfPKfii", "ordinal": 0, "grid": [3, 1, 1], "block": [128, 1, 1],
                      "shared": 0, "args": [buffer("out", "out.before.npy", "out.after.npy"),
                                            buffer("logits", "logits.npy", "logits.npy"),
                                            {"name": "rows", "kind": "scalar", "dtype": "int32", "value": ROWS},
                                            {"name": "cols", "kind": "scalar", "dtype": "int32", "value": COLS}]}],
        "omitted": []}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    specs_from_capture(directory, [source])
    return source


def evaluator(source: Path, client) -> tuple[KernelEvaluator, str]:
    target = collect([source])[0]
    ev = KernelEvaluator.for_target(target, client, arch=client.device["arch"],
                                    timing=TimingOptions(min_runs=5, min_ms=20))
    original = Variant(target.text, target.spec.launch)
    outcome = ev.set_reference(ev.compile(original), original.launch, target.text)
    assert outcome.ok, outcome
    return ev, target.text


def test_a_variant_wrong_only_on_the_captured_data_is_rejected(tmp_path: Path, gpu_client) -> None:
    source = capture_softmax(tmp_path)
    ev, text = evaluator(source, gpu_client)
    try:
        assert [i.label for i in ev.instances][:2] == ["captured", "timing"]
        original = ev.evaluate(Variant(text, ev.spec.launch))
        assert original.ok, original
        assert original.timing is not None and original.timing.median_ms > 0
        outcome = ev.evaluate(Variant(text.replace(*CLAMPED), ev.spec.launch))
        assert outcome.status == "wrong-answer", outcome
        assert outcome.detail.startswith(f"captured (rows={ROWS}, cols={COLS}): out"), outcome.detail
    finally:
        ev.close()
    # without the capture, the same variant passes every random instance: only the captured data shows it wrong
    spec = source.with_name("softmax_rows.cuopt.toml")
    spec.write_text("\n".join(line for line in spec.read_text().splitlines() if not line.startswith("capture =")))
    plain, _ = evaluator(source, gpu_client)
    try:
        assert plain.evaluate(Variant(text.replace(*CLAMPED), plain.spec.launch)).ok
    finally:
        plain.close()


def test_bench_validates_and_times_on_the_captured_data(tmp_path: Path) -> None:
    source = capture_softmax(tmp_path)
    result = CliRunner().invoke(app, ["bench", str(source), "--json"])
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)
    assert row["status"] == "ok", row
    assert row["sizes"] == {"rows": ROWS, "cols": COLS} and row["capture"] == "softmax_rows"
