"""Captures written as `cuopt capture` writes them (docs/capture.md), from numpy arrays, for tests."""
from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import numpy as np

HERE = Path(__file__).parent
TRAIN_STEP = HERE / "train_step.cu"


@dataclass
class Arg:
    """A kernel argument: a scalar (`value`) or a buffer (`before`, and `after` when it changes)."""

    name: str
    dtype: str
    value: Union[int, float, None] = None
    before: np.ndarray | None = None
    after: np.ndarray | None = None
    omitted: str | None = None  # a buffer left out: its arrays are not written

    def manifest(self, kernel: str, ordinal: int, directory: Path) -> dict[str, Any]:
        if self.before is None and self.omitted is None:
            return {"name": self.name, "kind": "scalar", "dtype": self.dtype, "value": self.value}
        entry: dict[str, Any] = {"name": self.name, "kind": "buffer", "dtype": self.dtype, "offset": 0,
                                 "omitted": self.omitted}
        if self.omitted is not None:
            count = 0 if self.before is None else self.before.size
            return {**entry, "allocation": count * 4, "count": count, "before": None, "after": None}
        after = self.before if self.after is None else self.after
        files = {}
        for when, data in (("before", self.before), ("after", after)):
            files[when] = f"{kernel}.{ordinal}.{self.name}.{when}.npy"
            np.save(directory / files[when], data.astype(self.dtype))
        return {**entry, "allocation": self.before.nbytes, "count": int(self.before.size), **files}


@dataclass
class Launch:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: list[Arg]
    entry: str = ""
    shared: int = 0
    ordinal: int = 0


@dataclass
class Program:
    """A source file copied into a directory, and captures of it."""

    root: Path
    original: Path = TRAIN_STEP
    source: Path = field(init=False)

    def __post_init__(self) -> None:
        self.source = self.root / self.original.name
        if not self.source.exists():
            shutil.copy(self.original, self.source)

    def capture(self, launches: list[Launch], name: str = "", **overrides: Any) -> Path:
        directory = self.root / ".cuopt" / "captures" / (name or self.source.stem)
        if directory.exists():
            shutil.rmtree(directory)
        directory.mkdir(parents=True)
        manifest = {
            "format": 1, "cuopt": "0", "created": "2026-01-01T00:00:00Z", "command": ["./train_step", "2", "4", "64"],
            "cwd": str(self.root), "exit": 0, "device": "NVIDIA H100",
            "sources": [{"path": self.source.name,
                         "sha256": hashlib.sha256(self.source.read_bytes()).hexdigest()}],
            "launches": [{"source": self.source.name, "kernel": la.kernel, "entry": la.entry or la.kernel,
                          "mangled": f"_Z{len(la.kernel)}{la.kernel}", "ordinal": la.ordinal, "grid": list(la.grid),
                          "block": list(la.block), "shared": la.shared,
                          "args": [a.manifest(la.kernel, la.ordinal, directory) for a in la.args]}
                         for la in launches],
            "omitted": [],
            **overrides,
        }
        (directory / "manifest.json").write_text(json.dumps(manifest, indent=1))
        return directory


B, NH, T = 2, 4, 64
N = B * NH * T


def train_step_launches(seed: int = 0) -> list[Launch]:
    """The five launches of train_step.cu's main at B=2, NH=4, T=64, with the outputs computed here."""
    rng = np.random.default_rng(seed)
    p, g, m = (rng.standard_normal(N).astype(np.float32) for _ in range(3))
    lr, beta1 = np.float32(3e-4), np.float32(0.9)
    m2 = (beta1 * m + (np.float32(1) - beta1) * g).astype(np.float32)
    p2 = (p - lr * m2).astype(np.float32)
    att = (rng.standard_normal(N) * 8).astype(np.float32)
    rows = att.reshape(B * NH, T).astype(np.float64)
    e = np.exp(rows - rows.max(axis=1, keepdims=True))
    probs = (e / e.sum(axis=1, keepdims=True)).astype(np.float32).ravel()
    x = rng.standard_normal(N).astype(np.float32)
    return [
        Launch("adam_step", (2, 1, 1), (256, 1, 1), [
            Arg("param", "float32", before=p, after=p2), Arg("grad", "float32", before=g),
            Arg("m", "float32", before=m, after=m2), Arg("lr", "float32", value=float(lr)),
            Arg("beta1", "float32", value=float(beta1)), Arg("n", "int32", value=N)]),
        Launch("row_softmax", (2, B * NH, 1), (32, 1, 1), [
            Arg("out", "float32", before=np.zeros(N, np.float32), after=probs), Arg("in", "float32", before=att),
            Arg("rows", "int32", value=B * NH), Arg("cols", "int32", value=T)]),
        Launch("scale", (4, 1, 1), (128, 1, 1), [
            Arg("x", "float32", before=x, after=(x * np.float32(0.5)).astype(np.float32)),
            Arg("s", "float32", value=0.5), Arg("n", "int32", value=N)], entry="scale<float, 128>"),
        Launch("bias_add", (2, 1, 1), (256, 1, 1), [  # the program passes g aliased: the launch changes it
            Arg("out", "float32", before=p2, after=p2 + np.tile(g[:T], N // T)),
            Arg("bias", "float32", before=g, after=g * np.float32(2)), Arg("n", "int32", value=N),
            Arg("c", "int32", value=T)]),
        Launch("zero_rows", (N // 128, 1, 1), (128, 1, 1), [Arg("x", "float32", before=m2, after=np.zeros(N))]),
    ]


TRAINSTEP = HERE.parent.parent / "samples" / "programs" / "trainstep" / "trainstep.cu"


def trainstep_launches(B: int = 4, T: int = 48, C: int = 72, NH: int = 4, V: int = 200) -> list[Launch]:
    """First launches of samples/programs/trainstep at its configuration, with random arrays of the
    sizes its allocations have (outputs left as they were: what init needs is the layout)."""
    rng = np.random.default_rng(5)

    def f(name: str, count: int) -> Arg:
        return Arg(name, "float32", before=rng.standard_normal(count).astype(np.float32))

    def i(name: str, value: int, dtype: str = "int32") -> Arg:
        return Arg(name, dtype, value=value)

    BT, OC, P = B * T, 3 * C, 3 * C * C
    tokens = Arg("tokens", "int32", before=rng.integers(0, V, BT).astype(np.int32))
    return [
        Launch("encoder_forward_kernel", (BT * C // 256, 1, 1), (256, 1, 1),
               [f("out", BT * C), tokens, f("wte", V * C), f("wpe", T * C), i("B", B), i("T", T), i("C", C)]),
        Launch("layernorm_forward_kernel", (2, 1, 1), (128, 1, 1),
               [f("out", BT * C), f("mean", BT), f("rstd", BT), f("inp", BT * C), f("weight", C), f("bias", C),
                i("N", BT), i("C", C), Arg("eps", "float32", value=1e-5)]),
        Launch("matmul_forward_kernel", ((OC + 15) // 16, BT // 16, 1), (16, 16, 1),
               [f("out", BT * OC), f("inp", BT * C), f("weight", OC * C), f("bias", OC), i("BT", BT), i("C", C),
                i("OC", OC)], entry="matmul_forward_kernel<16>"),
        Launch("attention_query_key_kernel", ((T * T + 255) // 256, B * NH, 1), (256, 1, 1),
               [f("preatt", B * NH * T * T), f("qkv", BT * OC), i("T", T), i("C", C), i("NH", NH),
                Arg("scale", "float32", value=float(np.float32(1) / np.sqrt(np.float32(C // NH))))]),
        Launch("softmax_forward_kernel", (B * NH * T // 256, 1, 1), (256, 1, 1),
               [f("att", B * NH * T * T), f("preatt", B * NH * T * T), i("N", B * NH * T), i("T", T)]),
        Launch("gelu_forward_kernel", (BT * 4 * C // 512, 1, 1), (512, 1, 1),
               [f("out", BT * 4 * C), f("inp", BT * 4 * C), i("N", BT * 4 * C)]),
        Launch("adamw_kernel", ((P + 511) // 512, 1, 1), (512, 1, 1),
               [f("params", P), f("grads", P), f("m", P), f("v", P), i("num_parameters", P, "int64"),
                Arg("learning_rate", "float32", value=3e-4), Arg("beta1", "float32", value=0.9),
                Arg("beta2", "float32", value=0.999), Arg("beta1_correction", "float32", value=0.1),
                Arg("beta2_correction", "float32", value=0.001), Arg("eps", "float32", value=1e-8),
                Arg("weight_decay", "float32", value=0.0)]),
    ]
