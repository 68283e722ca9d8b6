"""A capture matched to the source: the captured launch of a kernel, checked against its signature."""
from __future__ import annotations

import functools
from pathlib import Path

from cuopt.capture.manifest import CAPTURES, MANIFEST, Capture, CapturedArg, CapturedLaunch, CaptureError, load
from cuopt.source.kernels import Kernel, Param


def directory_of(value: str, spec_dir: Path) -> Path:
    """The directory a spec's `capture` key names: a name under `.cuopt/captures/` next to the spec,
    or a path relative to the spec's directory."""
    return spec_dir / value if "/" in value else spec_dir / CAPTURES / value


def opened(directory: Path) -> Capture:
    """`manifest.load`, read once while the manifest is unchanged."""
    try:
        stat = (directory / MANIFEST).stat()
    except OSError:
        return load(directory)  # says what is missing
    return _cached(directory.resolve(), (stat.st_ino, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size))


@functools.lru_cache(maxsize=16)
def _cached(directory: Path, version: tuple[int, ...]) -> Capture:
    return load(directory)


def launch_of(capture: Capture, entry: str) -> CapturedLaunch:
    """The first captured launch of `entry`; an error listing what the capture holds when it has none."""
    launch = capture.launch(entry)
    if launch is None:
        held = sorted({la.entry for la in capture.launches})
        raise CaptureError(f"{capture.directory / MANIFEST}: no launch of {entry} was captured "
                           f"(captured: {', '.join(held) or 'none'})")
    return launch


def layout_problem(launch: CapturedLaunch, kernel: Kernel) -> str | None:
    """Why the captured arguments do not fit `kernel`'s signature (count, names, kinds, dtypes); None when
    they do."""
    params = kernel.params
    if len(launch.args) != len(params):
        return (f"the capture has {len(launch.args)} arguments ({', '.join(a.name for a in launch.args)}), the "
                f"source's {kernel.entry} (line {kernel.line}) {len(params)} ({', '.join(p.name for p in params)})")
    for i, (a, p) in enumerate(zip(launch.args, params)):
        expected = _kind(p)
        if a.name != p.name or (a.kind, a.dtype) != expected:
            return (f"argument {i + 1} is {a.name} ({_describe(a.kind, a.dtype)}) in the capture, {p.name} "
                    f"({_describe(*expected)}) in the source's {kernel.entry} (line {kernel.line})")
    return None


def check_layout(capture: Capture, launch: CapturedLaunch, kernel: Kernel) -> None:
    """A CaptureError naming the manifest when the captured arguments do not fit the signature."""
    problem = layout_problem(launch, kernel)
    if problem is not None:
        raise CaptureError(f"{capture.directory / MANIFEST}: {launch.entry}: {problem}; the program was built "
                           "from another version of the source: capture again")


def _kind(p: Param) -> tuple[str, str]:
    return ("buffer" if p.pointer else "scalar", p.ctype.dtype if p.ctype is not None else p.base_type)


def _describe(kind: str, dtype: str) -> str:
    return f"{dtype} {'pointer' if kind == 'buffer' else 'scalar'}"


def arrays_left_out(launch: CapturedLaunch) -> list[CapturedArg]:
    """The buffers whose contents the capture left out (before or after), said where they fall back."""
    return [a for a in launch.args if a.buffer and (a.before is None or a.after is None)]
