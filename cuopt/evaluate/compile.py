"""nvcc: source -> cubin for one kernel, ptxas resource report, on-disk cache, parallel builds."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from cuopt.compile_settings import NO_SETTINGS, CompileSettings
from cuopt.errors import CuoptError
from cuopt.evaluate.demangle import demangle, instantiation_of, matches
from cuopt.evaluate.toolkit import find_nvcc
from cuopt.resources import cache_dir
from cuopt.source.kernels import explicit_instantiation, load
from cuopt.source.overrides import COPIES, Files
from cuopt.source.templates import TemplateError, instantiations, parse_instantiation, same_argument, split_args

DEFAULT_ARCH = "sm_90"
BASE_FLAGS = ("-O3", "-std=c++17")
COMPILE_TIMEOUT_S = 180


class CompileError(CuoptError):
    """nvcc failed, or the kernel is not in the cubin; the message carries nvcc's first error line."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


@dataclass(frozen=True)
class Resources:
    """ptxas's report for one entry function."""

    registers: int = 0
    shared_bytes: int = 0  # static shared memory
    stack_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    barriers: int = 0


@dataclass(frozen=True)
class Compiled:
    """A cubin holding the kernel, its entry symbol and resources."""

    cubin: Path
    symbol: str
    resources: Resources
    arch: str
    cached: bool = False
    # when sizes are compile-time macros: the build for each size set (timing sizes first, as
    # `Bound.instances` orders them; this one is the first); empty when this cubin serves every size
    sized: tuple[Compiled, ...] = ()

    def at(self, size_set: int) -> Compiled:
        """The build that runs size set `size_set` (an index into the evaluator's instances)."""
        return self.sized[size_set] if self.sized else self


def require_nvcc() -> str:
    nvcc = find_nvcc()
    if nvcc is None:
        raise CuoptError("nvcc not found: install the CUDA toolkit or put nvcc on PATH (or set CUDA_HOME)")
    return nvcc


@lru_cache(maxsize=1)
def nvcc_version() -> str:
    out = subprocess.run([require_nvcc(), "--version"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"release [\d.]+, V[\d.]+", out)
    return m.group(0) if m else out.strip().splitlines()[-1] if out.strip() else "unknown"


def compile_kernel(source: str, kernel: str, *, arch: str = DEFAULT_ARCH,
                   settings: CompileSettings = NO_SETTINGS, files: Files = ()) -> Compiled:
    """Compile `source` to a cubin with `settings` (include directories, definitions, flags) and find
    `kernel`'s entry symbol; cached on disk by content, settings included. `files` are written beside
    the source (the private copies of headers it includes, `overrides.with_sizes`). `kernel` may name
    a template instantiation (`scale<float, 256>`): the source then gets an explicit instantiation
    appended unless it has one."""
    nvcc = require_nvcc()
    includes = tuple(str(d) for d in settings.include_dirs)
    headers = _header_digest("\n".join([source, *(text for _, text in files)]), includes)
    key = hashlib.sha256(json.dumps(
        [source, kernel, arch, BASE_FLAGS, settings.nvcc_args(), headers, nvcc_version()]
        + ([list(files)] if files else [])).encode()).hexdigest()[:32]
    store = cache_dir() / "cubin"
    store.mkdir(parents=True, exist_ok=True)
    cubin, meta = store / f"{key}.cubin", store / f"{key}.json"
    if cubin.is_file() and meta.is_file():
        data = json.loads(meta.read_text())
        return Compiled(cubin, data["symbol"], Resources(**data["resources"]), arch, cached=True)

    with tempfile.TemporaryDirectory(prefix="cuopt-nvcc-") as tmp:
        src = Path(tmp, "kernel.cu")
        src.write_text(with_instantiation(source, kernel) if "<" in kernel else source)
        for name, text in files:
            Path(tmp, name).parent.mkdir(parents=True, exist_ok=True)
            Path(tmp, name).write_text(text, errors="surrogateescape")
        out = Path(tmp, "kernel.cubin")
        argv = [nvcc, "-cubin", f"-arch={arch}", *BASE_FLAGS, "-Xptxas", "-v", *settings.nvcc_args(),
                "-o", str(out), str(src)]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise CompileError(f"nvcc timed out after {COMPILE_TIMEOUT_S} s") from None
        log = proc.stdout + proc.stderr
        if proc.returncode != 0 or not out.is_file():
            other = other_instantiation(log, kernel) if "<" in kernel else None
            if other is not None:
                raise CompileError(f"nvcc failed in another instantiation of the template ({other[0]}): "
                                   f"{other[1]}", log)
            raise CompileError(f"nvcc failed: {first_error(log)}", log)
        report = parse_ptxas(log)
        symbol = entry_symbol(kernel, report)
        # unique temporary names: several threads may build the same source at once
        tmp_cubin = store / f"{key}.{uuid.uuid4().hex}.tmp"
        shutil.copyfile(out, tmp_cubin)
        os.replace(tmp_cubin, cubin)
    tmp_meta = store / f"{key}.{uuid.uuid4().hex}.json.tmp"
    tmp_meta.write_text(json.dumps({"symbol": symbol, "resources": asdict(report[symbol])}))
    os.replace(tmp_meta, meta)
    return Compiled(cubin, symbol, report[symbol], arch)


def compile_many(jobs: list[tuple], *, arch: str = DEFAULT_ARCH,
                 workers: int | None = None) -> list[Compiled | CompileError]:
    """Compile (source, kernel, settings) or (source, kernel, settings, files) jobs in parallel on
    the CPU cores; failures come back as CompileError."""
    def one(job: tuple) -> Compiled | CompileError:
        try:
            return compile_kernel(job[0], job[1], arch=arch, settings=job[2], files=job[3] if len(job) > 3 else ())
        except CompileError as exc:
            return exc

    if not jobs:
        return []
    with ThreadPoolExecutor(max_workers=workers or max(1, os.cpu_count() or 1)) as pool:
        return list(pool.map(one, jobs))


def first_error(log: str) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for ln in lines:
        if re.search(r"\berror\b", ln, re.IGNORECASE):
            ln = re.sub(rf"^.*?{COPIES}/\d+/([^/(]+)\((\d+)\): ", r"\1:\2: ", ln)
            return re.sub(r"^.*?kernel\.cu\((\d+)\): ", r"line \1: ", ln)
    return lines[-1] if lines else "no output"


_WITH = re.compile(r"detected during instantiation of .*\[with (?P<bindings>[^\]]*)\]")


def other_instantiation(log: str, kernel: str) -> tuple[str, str] | None:
    """(`T=double, BLOCK=128`, first error) when every nvcc error is inside an instantiation of the
    template other than `kernel` (`scale<float, 256>`); None when any error is in `kernel` itself
    or outside template instantiations."""
    wanted = parse_instantiation(kernel).args
    lines = log.splitlines()
    found: list[tuple[str, str]] = []
    for i, line in enumerate(lines):
        if not re.search(r"\berror\b", line) or "errors detected" in line or " error detected" in line:
            continue
        m = next((m for note in lines[i + 1:i + 8] if (m := _WITH.search(note)) is not None), None)
        if m is None:
            return None
        values = [b.split("=", 1)[-1].strip() for b in split_args(m.group("bindings"))]
        if len(values) == len(wanted) and all(same_argument(a, b) for a, b in zip(values, wanted)):
            return None
        found.append((m.group("bindings"), first_error(line)))
    return found[0] if found else None


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)\s*\n\s*(\d+) bytes stack frame, (\d+) bytes spill stores, "
                    r"(\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?")


def parse_ptxas(log: str) -> dict[str, Resources]:
    """Resources per entry function from `ptxas -v` output."""
    entries: dict[str, dict[str, int]] = {}
    current: str | None = None
    for block in re.split(r"(?=ptxas info\s*: )", log):
        m = _ENTRY.search(block)
        if m:
            current = m.group(1)
            entries.setdefault(current, {})
            continue
        m = _PROPS.search(block)
        if m and m.group(1) in entries:
            entries[m.group(1)].update(stack_bytes=int(m.group(2)), spill_stores=int(m.group(3)),
                                       spill_loads=int(m.group(4)))
            current = m.group(1)
            continue
        m = _USED.search(block)
        if m and current in entries:
            entries[current].update(registers=int(m.group(1)), barriers=int(m.group(2) or 0),
                                    shared_bytes=int(m.group(3) or 0))
    return {name: Resources(**vals) for name, vals in entries.items()}


def base_name(symbol: str) -> str | None:
    """The unqualified function name of an Itanium-mangled symbol (`_Z5saxpyifPKfPf` -> `saxpy`);
    None for template instantiations."""
    if not symbol.startswith("_Z"):
        return symbol
    s = symbol[2:]
    if s.startswith("L"):
        s = s[1:]
    nested = s.startswith("N")
    if nested:
        s = s[1:].lstrip("KVr")
    name = None
    while s and s[0].isdigit():
        m = re.match(r"(\d+)", s)
        assert m is not None
        n = int(m.group(1))
        name, s = s[len(m.group(1)):len(m.group(1)) + n], s[len(m.group(1)) + n:]
        if not nested:
            break
    if s.startswith("I"):
        return None
    return name


def with_instantiation(source: str, kernel: str) -> str:
    """`source` with an explicit instantiation of template kernel `kernel` (`scale<float, 256>`)
    appended, unless the source instantiates it explicitly already."""
    try:
        k = load(source).kernel(kernel)
    except TemplateError as exc:
        raise CompileError(f"{kernel}: {exc}") from None
    if k is None or k.instantiation is None:
        raise CompileError(f"kernel {kernel!r}: the source defines no template kernel {kernel.split('<')[0]!r}")
    inst = k.instantiation
    for found, explicit, _ in instantiations(load(source).tree.root_node, inst.name):
        if explicit and len(found.args) == len(inst.args) and all(
                same_argument(a, b) for a, b in zip(found.args, inst.args)):
            return source
    return source.rstrip("\n") + "\n\n" + explicit_instantiation(k) + "\n"


def entry_symbol(kernel: str, report: dict[str, Resources]) -> str:
    """The entry symbol of `kernel`: a plain name (one definition), or a template instantiation
    (`scale<float, 256>`, found by demangling)."""
    if "<" in kernel:
        return _instantiation_symbol(kernel, report)
    found = [sym for sym in report if base_name(sym) == kernel]
    if not found:
        raise CompileError(f"kernel {kernel!r} is not among the compiled entry functions "
                           f"({', '.join(sorted(report)) or 'none'})")
    if len(found) > 1:
        raise CompileError(f"kernel {kernel!r} is overloaded ({', '.join(found)}); cuopt needs one definition")
    return found[0]


def _instantiation_symbol(kernel: str, report: dict[str, Resources]) -> str:
    wanted = parse_instantiation(kernel)
    names = demangle(sorted(report))
    found = [sym for sym, name in names.items()
             if (inst := instantiation_of(name)) is not None and matches(inst, wanted)]
    if len(found) == 1:
        return found[0]
    shown = ", ".join(f"{names[s].split('(')[0].removeprefix('void ')}" for s in sorted(report)) or "none"
    if not found:
        raise CompileError(f"kernel {kernel!r} is not among the compiled entry functions ({shown})")
    raise CompileError(f"kernel {kernel!r} matches several entry functions ({', '.join(found)})")


def _header_digest(source: str, include_dirs: tuple[str, ...]) -> str:
    """Digest of the headers the source includes (`#include "..."` or `<...>`) that lie in the include
    directories, so the cache notices header edits."""
    h = hashlib.sha256()
    for name in re.findall(r'^\s*#\s*include\s*["<]([^">]+)[">]', source, re.MULTILINE):
        for d in include_dirs:
            p = Path(d, name)
            if p.is_file():
                h.update(name.encode() + p.read_bytes())
                break
    return h.hexdigest()
