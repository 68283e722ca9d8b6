"""Run a kernel and its rewrites on the CPU, through tests/rewrite/emulation.h, and compare what
they write: a check of a rewrite's meaning on a machine without a GPU (it says nothing of speed,
and nothing of what only a GPU shows, such as misaligned vector loads or races that a barrier
per block hides, but it flags a cache-hinted load (`__ldg`) of other than global memory, which
faults on a GPU). One C++ program holds the original and every variant, each in a namespace of
its own; the spec gives the buffers, their initial values, the scalars and each launch."""
from __future__ import annotations

import functools
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cuopt.spec.bind import BufferValue, ScalarValue
from cuopt.spec.dtypes import is_float
from cuopt.spec.model import Launch
from cuopt.targets import Target

HEADER = Path(__file__).with_name("emulation.h")
CTYPES = {"float32": "float", "float64": "double", "float16": "__half", "bfloat16": "__nv_bfloat16",
          "int8": "signed char", "uint8": "unsigned char", "int16": "short", "uint16": "unsigned short", "int32": "int",
          "uint32": "unsigned", "int64": "long long", "uint64": "unsigned long long"}
FLAGS = ("-std=c++20", "-O0", "-g0", "-fsanitize=address", "-w", "-pthread")  # the header's and every program's


@dataclass(frozen=True)
class Variant:
    label: str
    source: bytes
    launch: Launch


@functools.lru_cache(maxsize=1)
def compiler() -> str | None:
    """A C++20 compiler with <barrier>, or None (asked once a process)."""
    gxx = shutil.which("g++")
    if gxx is None:
        return None
    probe = subprocess.run([gxx, "-std=c++20", "-fsyntax-only", "-x", "c++", "-"], input="#include <barrier>\n",
                           capture_output=True, text=True)
    return gxx if probe.returncode == 0 else None


def precompiled(work: Path) -> Path:
    """A directory holding emulation.h and the header precompiled with FLAGS, to build programs
    with (`differences`): each then skips parsing the standard headers, half of its build time.
    Where the precompiled header does not fit, g++ reads the text header beside it."""
    gxx = compiler()
    assert gxx is not None, "no C++20 compiler"
    work.mkdir(parents=True, exist_ok=True)
    header = work / HEADER.name
    shutil.copyfile(HEADER, header)
    subprocess.run([gxx, *FLAGS, "-x", "c++-header", str(header), "-o", f"{header}.gch"], capture_output=True)
    return work


@dataclass(frozen=True)
class Program:
    """The emulation program of a kernel and its variants, written but not yet built."""

    source: Path
    labels: tuple[str, ...]  # unit i's label: "original", then the variants'


def program(target: Target, variants: list[Variant], sizes: list[dict[str, int]], work: Path) -> Program:
    """Write the program that runs the original and every variant at each size set and prints each
    variant whose outputs differ from the original's beyond the spec's tolerance."""
    work.mkdir(parents=True, exist_ok=True)
    units = [("original", target.source.source), *((v.label, v.source) for v in variants)]
    for i, (_, source) in enumerate(units):
        # each unit sits in a namespace of its own: C linkage would give their kernels one symbol;
        # emulation.h stands in for the CUDA headers
        unit = re.sub(rb"#include\s*<cuda\w*\.h>", b"", re.sub(rb'extern\s+"C"\s*', b"", source))
        (work / f"unit{i}.cu").write_bytes(unit)
    body = [_size_set(target, variants, s) for s in sizes]
    main = [f'#include "{HEADER.name}"',
            *(f"namespace unit{i} {{\n#include \"unit{i}.cu\"\n}}" for i in range(len(units))),
            "static int failures = 0;", *_helpers(), "int main() {", *body, "    return failures != 0;", "}"]
    source = work / "emulate.cpp"
    source.write_text("\n".join(main) + "\n")
    return Program(source, tuple(label for label, _ in units))


def differences(p: Program, headers: Path = HEADER.parent, cpu: int | None = None) -> dict[str, str]:
    """Build `p` with emulation.h from `headers` (the source tree's, or `precompiled`'s) and run it
    (with AddressSanitizer), on CPU `cpu` alone where given and taskset is installed (its hundreds
    of threads then wait for each other without crossing cores: a third less CPU time): each
    variant that differs (or the build or the run that failed), with its first difference; empty
    when all agree at every size set."""
    gxx = compiler()
    assert gxx is not None, "no C++20 compiler"
    exe = p.source.with_suffix("")
    built = subprocess.run([gxx, *FLAGS, "-I", str(headers), "-x", "c++", str(p.source), "-o", str(exe)],
                           capture_output=True, text=True)
    if built.returncode:
        return {"build": built.stderr[-3000:]}
    taskset = shutil.which("taskset") if cpu is not None else None
    pinned = [taskset, "-c", str(cpu)] if taskset else []
    ran = subprocess.run([*pinned, str(exe)], capture_output=True, text=True, timeout=600)
    found: dict[str, str] = {}
    for line in ran.stdout.splitlines():
        index, _, what = line.partition(" ")
        found.setdefault(p.labels[int(index)], what)
    if ran.returncode and not found:
        found["run"] = f"exit {ran.returncode}: {ran.stderr[-2000:]}"
    return found


def _helpers() -> list[str]:
    return [
        "static unsigned long long lcg = 88172645463325252ull;",
        "static double draw() { lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;"
        " return double(lcg >> 11) / double(1ull << 53); }",
        "template <class T> static bool near(T a, T b, double rtol, double atol) {",
        "    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, __half> ||",
        "                  std::is_same_v<T, __nv_bfloat16>) {",
        "        if (std::isnan(double(a)) || std::isnan(double(b))) return std::isnan(double(a)) == std::isnan(double(b));",
        "        if (a == b) return true;  // equal infinities too",
        "        return std::fabs(double(a) - double(b)) <= atol + rtol * std::fabs(double(b));",
        "    } else { return a == b; }",
        "}",
    ]


def _fill(value: BufferValue, name: str, ctype: str) -> str:
    kind, *args = value.init
    draw = {"uniform": f"{args[0] if args else 0} + ({args[1] - args[0] if args else 1}) * draw()",
            "normal": f"{args[0] if args else 0} + {args[1] if len(args) > 1 else 1} * "
                      "std::sqrt(-2 * std::log(1 - draw())) * std::cos(6.283185307179586 * draw())",
            "randint": f"std::floor({args[0] if args else 0} + ({args[1] - args[0] if args else 1}) * draw())",
            "zeros": "0", "ones": "1"}[kind]
    return f"        for (size_t i = 0; i < {value.count}; ++i) {name}[i] = ({ctype})({draw});"


def _size_set(target: Target, variants: list[Variant], sizes: dict[str, int]) -> str:
    bound = target.bound
    base = bound.instance("emulated", sizes, target.spec.launch)
    runs = [(0, base), *((i + 1, bound.instance("emulated", sizes, v.launch)) for i, v in enumerate(variants))]
    lines = ["    {"]
    buffers = [a for a in base.args if isinstance(a, BufferValue)]
    for a in buffers:
        ctype = CTYPES[a.dtype]
        lines += [f"        std::vector<{ctype}> {a.name}_init({a.count}), {a.name}_ref({a.count}), "
                  f"{a.name}_got({a.count});", _fill(a, f"{a.name}_init", ctype)]
    where = ",".join(f"{k}={v}" for k, v in sorted(sizes.items()))
    for index, inst in runs:
        into = "ref" if index == 0 else "got"
        lines += [f"        {a.name}_{into} = {a.name}_init;" for a in buffers]
        lines.append(f"        global_memory = {{{', '.join(f'extent({a.name}_{into})' for a in buffers)}}};")
        lines.append(f"        launch(dim3{{{', '.join(map(str, inst.grid))}}}, dim3{{{', '.join(map(str, inst.block))}}}, "
                     f"[&] {{ unit{index}::{target.kernel.entry}"
                     f"({', '.join(_argument(a, into) for a in inst.args)}); }});")
        lines.append(f"        if (outside_global.exchange(false)) {{ printf(\"{index} at {where}: a cache-hinted load "
                     f"(__ldg, ...) read outside global memory, which faults on a GPU\\n\"); ++failures; }}")
        if index == 0:
            continue
        for a in buffers:
            if a.role == "in":
                continue
            rtol, atol = target.spec.tolerance_for(a.dtype) if is_float(a.dtype) else (0.0, 0.0)
            lines.append(f"        for (size_t i = 0; i < {a.count}; ++i) if (!near({a.name}_got[i], {a.name}_ref[i], "
                         f"{rtol}, {atol})) {{ printf(\"{index} at {where}: {a.name}[%zu] = %.9g, the original "
                         f"wrote %.9g\\n\", i, double({a.name}_got[i]), double({a.name}_ref[i])); ++failures; break; }}")
    lines.append("    }")
    return "\n".join(lines)


def _argument(value: BufferValue | ScalarValue, into: str) -> str:
    if isinstance(value, BufferValue):
        return f"Buffer{{{value.name}_{into}.data()}}"
    return repr(value.value) if isinstance(value.value, float) else str(value.value)

