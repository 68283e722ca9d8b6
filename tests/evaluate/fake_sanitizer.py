"""A stand-in for compute-sanitizer on a machine without a GPU: `install(dir, behaviour)` writes an
executable `compute-sanitizer` into `dir` that answers `--tool T ...` as `behaviour[T]` says:
"clean", "slow" (clean after half a second), "error" (memcheck's report, exit 86), "hazard"
(racecheck's summary, exit 0), "broken" (exit 1), "flaky" (broken the first time, then clean),
"hang" (sleeps), or "together" (clean, once every other tool of the call has started:
it waits for them, and says it could not run if they never start)."""
from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

SCRIPT = '''#!{python}
import json, sys, time
from pathlib import Path
argv = sys.argv[1:]
tool = argv[argv.index("--tool") + 1]
behaviour = json.loads({behaviour!r})
marks = Path({marks!r})
(marks / ("started-" + tool)).touch()
(marks / "log").open("a").write(tool + "\\n")
(marks / "spans").open("a").write(f"start {{tool}} {{time.time()}}\\n")
how = behaviour[tool]
if how == "error":
    print("========= Invalid __global__ read of size 16 bytes")
    print("========= ERROR SUMMARY: 1 error")
    sys.exit(86)
if how == "hazard":
    print("========= Error: Race reported between Write access and Read access")
    print("========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)")
    sys.exit(0)
if how == "flaky" and not (marks / ("flaky-" + tool)).exists():
    (marks / ("flaky-" + tool)).touch()
    how = "broken"
if how == "broken":
    print("========= Error: Target application terminated before first instrumented API call")
    sys.exit(1)
if how == "hang":
    time.sleep(60)
if how == "slow":
    time.sleep(0.5)
if how == "together":
    others = [t for t in behaviour if t != tool]
    deadline = time.time() + 20
    while not all((marks / ("started-" + t)).exists() for t in others):
        if time.time() > deadline:
            print("the other tools never started while this one ran")
            sys.exit(1)
        time.sleep(0.02)
print("========= ERROR SUMMARY: 0 errors")
(marks / "spans").open("a").write(f"end {{tool}} {{time.time()}}\\n")
'''


def install(directory: Path, behaviour: dict[str, str]) -> Path:
    """The fake tool in `directory` (put it first on PATH); the calls are logged in `directory/log`,
    and when clean runs started and ended (seconds since the epoch) in `directory/spans`."""
    directory.mkdir(parents=True, exist_ok=True)
    tool = directory / "compute-sanitizer"
    tool.write_text(SCRIPT.format(python=sys.executable, behaviour=json.dumps(behaviour), marks=str(directory)))
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return tool
