"""Time the vendor-library equivalent (PyTorch: cuBLAS, cuDNN, its own CUDA kernels) of every sample at
the sizes and on the inputs of its spec, after checking its result against a plain float64 formula.

Run from the repository root on a machine with a CUDA GPU and PyTorch:

    python samples/vendor.py [--json out.json] [--kernel NAME] [--runs 20]

Timing follows cuopt's evaluator: warm-up calls, then CUDA events around the call alone, with a
256 MiB buffer written before each sample to flush the L2 cache; the median of at least --runs
samples (and at least 100 ms of them, for at most 5 s) is reported with its interquartile spread.
TF32 is off for matrix products and cuDNN, so every equivalent computes in FP32 like the samples.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

SAMPLES = Path(__file__).resolve().parent
if importlib.util.find_spec("cuopt") is None:  # a checkout without `pip install -e .`
    sys.path.insert(0, str(SAMPLES.parent))

from cuopt.errors import CuoptError  # noqa: E402
from cuopt.evaluate import inputs  # noqa: E402
from cuopt.evaluate.stats import summarize  # noqa: E402
from cuopt.evaluate.worker import FLUSH_BYTES  # noqa: E402
from cuopt.spec.bind import BufferValue, Instance  # noqa: E402
from cuopt.spec.model import Buffer  # noqa: E402
from cuopt.targets import Target, collect  # noqa: E402
from cuopt.ui import fmt_ms  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the registry can still be inspected; main() refuses to run
    torch = F = None

MIN_MS = 100.0  # keep sampling until the samples add up to this much ...
MAX_S = 5.0  # ... or this much wall time has passed (but never fewer than --runs samples)
WARMUP = 3
SIGNED = {"uint16": "int16", "uint32": "int32", "uint64": "int64"}  # same bits; torch handles these better


@dataclass(frozen=True)
class Case:
    """One equivalent ready to run: the call that is timed and the float64 formula it must match."""

    run: Callable[[], Any]
    reference: Callable[[], Any]
    note: str = ""  # what was decided while preparing (added to the equivalent's note)


@dataclass(frozen=True)
class Equivalent:
    """The vendor-library version of one sample kernel."""

    kernel: str
    output: str  # the spec buffer whose contents the result stands for
    op: str
    note: str
    build: Callable[[dict[str, Any], dict[str, int]], Case]  # (arguments by name, sizes) -> Case


EQUIVALENTS: dict[str, Equivalent] = {}


def equivalent(kernel: str, output: str, op: str, note: str = "") -> Callable:
    """Register the decorated builder as the equivalent of `kernel`."""
    def register(build: Callable[[dict[str, Any], dict[str, int]], Case]) -> Callable:
        EQUIVALENTS[kernel] = Equivalent(kernel, output, op, note, build)
        return build
    return register


# -- the equivalents: arguments are flat tensors (buffers) and Python numbers (scalars), by spec name ----
@equivalent("vector_add", "c", "torch.add(a, b, out=c)")
def _vector_add(t: dict[str, Any], s: dict[str, int]) -> Case:
    a, b, c = t["a"], t["b"], t["c"]
    return Case(lambda: torch.add(a, b, out=c), lambda: a.double() + b.double())


@equivalent("saxpy", "y", "torch.add(y, x, alpha=a, out=out)",
            "writes a separate output; the kernel updates y in place (same bytes)")
def _saxpy(t: dict[str, Any], s: dict[str, int]) -> Case:
    x, y, a = t["x"], t["y"], t["a"]
    out = torch.empty_like(y)
    return Case(lambda: torch.add(y, x, alpha=a, out=out), lambda: a * x.double() + y.double())


@equivalent("matmul", "C", "torch.mm(A, B, out=C)", "cuBLAS SGEMM, TF32 off")
def _matmul(t: dict[str, Any], s: dict[str, int]) -> Case:
    m, n, k = s["M"], s["N"], s["K"]
    a, b, c = t["A"].view(m, k), t["B"].view(k, n), t["C"].view(m, n)
    return Case(lambda: torch.mm(a, b, out=c), lambda: a.double() @ b.double())


@equivalent("matvec", "y", "torch.mv(A, x, out=y)", "cuBLAS SGEMV")
def _matvec(t: dict[str, Any], s: dict[str, int]) -> Case:
    a, x, y = t["A"].view(s["rows"], s["cols"]), t["x"], t["y"]
    return Case(lambda: torch.mv(a, x, out=y), lambda: (a.double() * x.double()).sum(dim=1))


equivalent("matvec_long", "y", "torch.mv(A, x, out=y)", "cuBLAS SGEMV")(_matvec)


@equivalent("covar", "symmat", "torch.mm(data.t(), data, out=symmat)", "cuBLAS SGEMM on the transposed view, TF32 off")
def _covar(t: dict[str, Any], s: dict[str, int]) -> Case:
    d, sym = t["data"].view(s["n"], s["m"]), t["symmat"].view(s["m"], s["m"])
    return Case(lambda: torch.mm(d.t(), d, out=sym), lambda: d.double().t() @ d.double())


@equivalent("transpose", "out", "out.copy_(in.t())", "a contiguous copy of the transposed view")
def _transpose(t: dict[str, Any], s: dict[str, int]) -> Case:
    rows, cols = s["rows"], s["cols"]
    x, out = t["in"].view(rows, cols), t["out"].view(cols, rows)
    return Case(lambda: out.copy_(x.t()), lambda: x.double().t())


@equivalent("softmax", "y", "torch.softmax(x, dim=1)", "allocates its output")
def _softmax(t: dict[str, Any], s: dict[str, int]) -> Case:
    x = t["x"].view(s["rows"], s["cols"])

    def reference() -> Any:
        e = (x.double() - x.double().amax(dim=1, keepdim=True)).exp()
        return e / e.sum(dim=1, keepdim=True)
    return Case(lambda: torch.softmax(x, dim=1), reference)


@equivalent("layernorm", "y", "F.layer_norm(x, (cols,), gamma, beta, eps)", "allocates its output")
def _layernorm(t: dict[str, Any], s: dict[str, int]) -> Case:
    cols = s["cols"]
    x, gamma, beta, eps = t["x"].view(s["rows"], cols), t["gamma"], t["beta"], float(t["eps"])

    def reference() -> Any:
        xd = x.double()
        mean = xd.mean(dim=1, keepdim=True)
        var = ((xd - mean) ** 2).mean(dim=1, keepdim=True)  # biased, as in the kernel
        return (xd - mean) / (var + eps).sqrt() * gamma.double() + beta.double()
    return Case(lambda: F.layer_norm(x, (cols,), gamma, beta, eps), reference)


@equivalent("reduce_sum", "out", "torch.sum(x)", "returns a new 0-d tensor; the kernel adds into out (zeroed)")
def _reduce_sum(t: dict[str, Any], s: dict[str, int]) -> Case:
    x = t["x"]
    return Case(lambda: torch.sum(x), lambda: x.double().sum())


@equivalent("histogram", "bins", "torch.bincount(data, minlength=256)",
            "int64 counts (the kernel's are uint32); bincount first reads max(data) to the host (timed)")
def _histogram(t: dict[str, Any], s: dict[str, int]) -> Case:
    data = t["data"]

    def reference() -> Any:
        ones = torch.ones(data.numel(), dtype=torch.int64, device=data.device)
        return torch.zeros(256, dtype=torch.int64, device=data.device).index_add_(0, data.long(), ones)
    try:
        torch.bincount(data[:16], minlength=256)
    except RuntimeError:
        return Case(lambda: torch.bincount(data.int(), minlength=256), reference,
                    "bincount refuses uint8: the bytes are converted to int32 in the timed call")
    return Case(lambda: torch.bincount(data, minlength=256), reference)


@equivalent("stencil2d", "out", "F.conv2d(in, five-point 3x3 weights)",
            "cuDNN, TF32 off; writes only the interior, as a new (h-2)x(w-2) tensor (the kernel writes the "
            "interior of the w x h grid); 9 multiply-adds per point (zero corners) instead of 5 adds, 1 multiply")
def _stencil2d(t: dict[str, Any], s: dict[str, int]) -> Case:
    h, w = s["h"], s["w"]
    grid = t["in"].view(h, w)
    weight = torch.tensor([[0.0, 0.2, 0.0], [0.2, 0.2, 0.2], [0.0, 0.2, 0.0]], dtype=grid.dtype,
                          device=grid.device).view(1, 1, 3, 3)

    def reference() -> Any:
        g = grid.double()
        return 0.2 * (g[1:-1, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:] + g[:-2, 1:-1] + g[2:, 1:-1])
    return Case(lambda: F.conv2d(grid.view(1, 1, h, w), weight), reference)


@equivalent("conv1d", "y", "F.conv1d(x, w)", "cuDNN cross-correlation (as the kernel), TF32 off; allocates its output")
def _conv1d(t: dict[str, Any], s: dict[str, int]) -> Case:
    n, k = s["n"], s["k"]
    x, w = t["x"], t["w"]
    m = n - k + 1

    def reference() -> Any:
        acc = torch.zeros(m, dtype=torch.float64, device=x.device)
        for j in range(k):
            acc += x[j:j + m].double() * float(w[j])
        return acc
    return Case(lambda: F.conv1d(x.view(1, 1, n), w.view(1, 1, k)), reference)


# -- running ----------------------------------------------------------------------------------------------
def tensors(instance: Instance, device: str) -> dict[str, Any]:
    """The spec's arguments: in/inout buffers with cuopt's inputs (same seed), out buffers empty."""
    out: dict[str, Any] = {}
    for index, a in enumerate(instance.args):
        if not isinstance(a, BufferValue):
            out[a.name] = a.value
            continue
        dtype = getattr(torch, SIGNED.get(a.dtype, a.dtype))
        if a.role == "out":
            out[a.name] = torch.empty(a.count, dtype=dtype, device=device)
        else:
            host = inputs.generate(a, instance.seed, index)
            out[a.name] = torch.from_numpy(host.view(SIGNED.get(a.dtype, a.dtype))).to(device)
    return out


def tolerance(target: Target, output: str) -> tuple[float, float]:
    """The spec's (rtol, atol) for the output buffer: what cuopt accepts from a rewritten kernel."""
    buf = target.spec.arg(output)
    assert isinstance(buf, Buffer), f"{target.kernel.name}: {output} is not a buffer of the spec"
    return target.spec.tolerance_for(buf.dtype)


def compare(result: Any, reference: Any, rtol: float, atol: float) -> tuple[bool, float]:
    """Element by element, `|result - reference| <= atol + rtol * |reference|`, NaNs in the same places;
    also the largest absolute error."""
    r, ref = result.reshape(-1).double(), reference.reshape(-1).double()
    if r.numel() != ref.numel():
        return False, float("inf")
    err = (r - ref).abs()
    nan = r.isnan() | ref.isnan()
    bad = (err > atol + rtol * ref.abs()) | (r.isnan() != ref.isnan())
    worst = float(err.masked_fill(nan, 0.0).max()) if err.numel() else 0.0
    return not bool(bad.any()), worst


def check(target: Target, instance: Instance, device: str) -> tuple[Case, bool, float]:
    """Prepare the equivalent of `target` at `instance` and compare one result with its reference."""
    eq = EQUIVALENTS[target.kernel.name]
    case = eq.build(tensors(instance, device), instance.sizes)
    ok, worst = compare(case.run(), case.reference(), *tolerance(target, eq.output))
    return case, ok, worst


def time_cuda(run: Callable[[], Any], flush: Any, min_runs: int) -> list[float]:
    """Milliseconds per call, each after writing `flush` (evicts the L2 cache), timed with CUDA events."""
    for _ in range(WARMUP):
        run()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples: list[float] = []
    began = time.perf_counter()
    while len(samples) < min_runs or (sum(samples) < MIN_MS and time.perf_counter() - began < MAX_S):
        flush.zero_()
        start.record()
        run()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return samples


def bench(target: Target, flush: Any, min_runs: int) -> dict[str, Any]:
    """One row: check, then time the equivalent at the spec's timing sizes. Never raises."""
    instance = target.bound.instances()[0]
    row: dict[str, Any] = {"sample": target.kernel.name, "file": target.path.name, "sizes": instance.sizes,
                           "bytes": instance.bytes_moved(), "torch": torch.__version__}
    eq = EQUIVALENTS.get(target.kernel.name)
    if eq is None:
        return {**row, "status": "no-equivalent", "error": "no vendor equivalent registered"}
    row.update(op=eq.op, note=eq.note)
    try:
        case, ok, worst = check(target, instance, "cuda")
        row.update(check="ok" if ok else "mismatch", max_abs_err=worst)
        if case.note:
            row["note"] = f"{eq.note}; {case.note}" if eq.note else case.note
        timing = summarize(time_cuda(case.run, flush, min_runs))
        row.update(status="ok" if ok else "mismatch", median_ms=timing.median_ms, spread=timing.spread,
                   runs=timing.runs, gbps=round(instance.bytes_moved() / (timing.median_ms * 1e-3) / 1e9, 1))
    except Exception as exc:  # one failing equivalent must not stop the others
        row.update(status="error", error=f"{type(exc).__name__}: {exc}".strip(), traceback=traceback.format_exc())
    return row


COLUMNS = (("sample", 12), ("op", 44), ("check", 9), ("median", 10), ("±", 7), ("GB/s", 8))


def print_row(row: dict[str, Any]) -> None:
    if row["status"] in ("error", "no-equivalent"):
        print(f"{row['sample']:<12} {row.get('op', '-'):<44} {row['status']}: {row['error']}", flush=True)
        return
    cells = (row["sample"], row["op"], row["check"], fmt_ms(row["median_ms"]), f"{row['spread'] * 100:.1f}%",
             str(row["gbps"]))
    line = " ".join(f"{c:<{w}}" if i < 3 else f"{c:>{w}}" for i, (c, (_, w)) in enumerate(zip(cells, COLUMNS)))
    extra = f"max abs err {row['max_abs_err']:.3g}; " if row["check"] == "mismatch" else ""
    print(f"{line}  {extra}{row['note']}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="PATH", type=Path, help="also write the rows as JSON to PATH")
    parser.add_argument("--kernel", "-k", help="only this sample kernel")
    parser.add_argument("--runs", type=int, default=20, help="timed samples per equivalent, at least (default 20)")
    args = parser.parse_args(argv)
    if torch is None:
        print("error: PyTorch is not installed (pip install torch, a CUDA build)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print(f"error: PyTorch {torch.__version__} sees no CUDA GPU", file=sys.stderr)
        return 2
    try:
        targets = collect([SAMPLES], args.kernel)
    except CuoptError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.cuda.get_device_name()
    print(f"{device}; torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}; "
          f"TF32 off; median of >= {args.runs} runs, L2 flushed before each", flush=True)
    print(" ".join(f"{name:<{w}}" if i < 3 else f"{name:>{w}}" for i, (name, w) in enumerate(COLUMNS)) + "  note")
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    rows = []
    for target in targets:
        row = {**bench(target, flush, max(1, args.runs)), "device": device, "cuda": torch.version.cuda}
        print_row(row)
        rows.append(row)
        torch.cuda.empty_cache()  # this sample's tensors are gone; give their memory back
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2, default=str) + "\n")
        print(f"wrote {args.json}")
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
