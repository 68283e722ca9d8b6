"""What one kernel's optimization gives: `KernelRun`, the plain data a search sends back from its
GPU worker (local thread or Ray task), and `KernelResult`, what the command and the Python API
report once the driver has written the files."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cuopt.spec.model import Launch


@dataclass(frozen=True)
class Probe:
    """What a kernel's search costs and what it found (so far, or in the end), for the scheduler."""

    baseline_ms: float | None  # None: the original did not get measured
    setup_s: float  # compiling the original, preparing inputs, its references and its baseline timing
    eval_s: float  # mean seconds per evaluated candidate (compile, validate, time)
    evaluations: int
    best_ms: float | None
    exhausted: bool  # every reachable variant was evaluated
    floor_ms: float | None  # the roofline floor at the timing size, when known
    since_best: int = 0  # evaluations since the best variant so far was found


@dataclass
class KernelRun:
    """A kernel's search as its worker sends it back: nothing of it is on disk yet."""

    path: Path
    table: str  # the spec table
    entry: str  # the kernel's entry: `saxpy`, `scale<float, 256>`
    status: str  # session statuses; "confirmed": `final_source` is to be written
    message: str
    summary: dict[str, Any]  # the JSON object of `optimize --json`, before the files are written
    trace: dict[str, Any]
    final_source: str = ""
    final_launch: Launch | None = None
    accuracy: str = ""  # one line: the reference and the errors against it
    confirmation: list[str] = field(default_factory=list)  # one line per confirmation attempt
    sanitizer: str = ""
    cache_rows: list[dict[str, Any]] = field(default_factory=list)  # new measurement-cache rows
    probe: Probe | None = None
    gpu: str = ""  # which GPU searched it
    seconds: float = 0.0  # wall time of the search on its worker
    rows: list[dict[str, Any]] = field(default_factory=list)  # self-play dataset rows, when the job asked


@dataclass(frozen=True)
class KernelResult:
    """One kernel's result, as `cuopt optimize --json` prints it (`json()`) and `cuopt.optimize`
    returns it. `speedup` is the confirmed one (interleaved re-timing) when a variant was
    confirmed; everything reported is in the file written (`written`)."""

    file: str
    kernel: str
    status: str  # "written", "dry-run", "not-faster", "no-candidate", "rejected", "skipped", "error"
    message: str
    baseline_ms: float | None = None
    best_ms: float | None = None
    speedup: float | None = None
    spread: float | None = None
    peak_pct: float | None = None
    baseline_peak_pct: float | None = None
    evaluations: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    sequence: list[str] = field(default_factory=list)
    launch: dict[str, Any] = field(default_factory=dict)
    launch_note: str = ""
    stop: str = ""
    trace: str | None = None
    report: str | None = None
    written: list[str] = field(default_factory=list)
    budget: dict[str, Any] = field(default_factory=dict)  # the kernel's share of the budget (docs/optimize.md)
    gpu: str = ""
    accuracy: dict[str, Any] = field(default_factory=dict)  # reference, original_error, error_vs_float64, ...
    diff: str = field(default="", repr=False)
    accuracy_line: str = field(default="", repr=False)
    confirmation: list[str] = field(default_factory=list, repr=False)
    sanitizer: str = field(default="", repr=False)

    def json(self) -> dict[str, Any]:
        """The JSON object of `cuopt optimize --json`."""
        data = asdict(self)
        for key in ("diff", "accuracy_line", "confirmation", "sanitizer", "accuracy"):
            data.pop(key)
        return {**data, **self.accuracy}


ACCURACY_KEYS = ("reference", "original_error", "shadow_ms", "reference_reason", "error_vs_float64")


def kernel_result(summary: dict[str, Any], **extra: Any) -> KernelResult:
    """A result from a summary object (the fields of `KernelResult.json()`) and the fields it lacks."""
    fields = {k: v for k, v in summary.items() if k not in ACCURACY_KEYS}
    accuracy = {k: summary[k] for k in ACCURACY_KEYS if k in summary}
    return KernelResult(**{**fields, **extra}, accuracy=accuracy)
