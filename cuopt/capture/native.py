"""The injection library: inject.cpp built with the toolkit's compiler against CUPTI on first use,
cached by content in cuopt's cache directory."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cuopt.errors import CuoptError
from cuopt.evaluate.compile import find_nvcc, require_nvcc
from cuopt.resources import cache_dir

SOURCE = Path(__file__).resolve().parent / "inject.cpp"
TIMEOUT_S = 300


@dataclass(frozen=True)
class Toolkit:
    """Where the CUDA headers and CUPTI live."""

    include: Path  # cuda.h
    cupti_include: Path  # cupti.h
    cupti_lib: Path  # libcupti.so


def _roots() -> list[Path]:
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = find_nvcc()
    if nvcc is not None:
        roots.append(str(Path(nvcc).resolve().parent.parent))
    roots += ["/usr/local/cuda", *sorted((str(p) for p in Path("/usr/local").glob("cuda-*")), reverse=True)]
    seen: list[Path] = []
    for r in roots:
        if r and Path(r).is_dir() and Path(r).resolve() not in seen:
            seen.append(Path(r).resolve())
    return seen


def _first(root: Path, subdirs: tuple[str, ...], name: str) -> Path | None:
    return next((root / s for s in subdirs if (root / s / name).is_file()), None)


def find_toolkit() -> Toolkit:
    """The first CUDA installation with cuda.h, cupti.h and libcupti.so; CuoptError when none has them."""
    for root in _roots():
        include = _first(root, ("include", "targets/x86_64-linux/include"), "cuda.h")
        cupti_include = _first(root, ("include", "extras/CUPTI/include", "targets/x86_64-linux/include"), "cupti.h")
        lib = _first(root, ("lib64", "lib", "extras/CUPTI/lib64", "targets/x86_64-linux/lib"), "libcupti.so")
        if include and cupti_include and lib:
            return Toolkit(include, cupti_include, lib)
    searched = ", ".join(str(r) for r in _roots()) or "no CUDA installation found"
    raise CuoptError(f"CUPTI not found (cupti.h and libcupti.so, which ship with the CUDA toolkit) in {searched}; "
                     "set CUDA_HOME to the toolkit")


def _compiler() -> list[str]:
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is not None:
        return [cxx, "-fPIC"]
    return [require_nvcc(), "-Xcompiler", "-fPIC"]


def library() -> Path:
    """The built injection library (built now if it is not in the cache)."""
    tk = find_toolkit()
    cmd = [*_compiler(), "-std=c++17", "-O2", "-shared", f"-I{tk.include}", f"-I{tk.cupti_include}",
           str(SOURCE), f"-L{tk.cupti_lib}", "-lcupti", "-ldl", f"-Wl,-rpath,{tk.cupti_lib}"]
    key = hashlib.sha256(SOURCE.read_bytes() + "\0".join(cmd).encode()).hexdigest()[:20]
    out = cache_dir() / "capture" / f"libcuopt_capture-{key}.so"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".so")
    os.close(fd)
    try:
        proc = subprocess.run([*cmd, "-o", tmp], capture_output=True, text=True, timeout=TIMEOUT_S)
        if proc.returncode != 0:
            first = next((ln for ln in (proc.stderr or proc.stdout).splitlines() if "error" in ln),
                         (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"])
            raise CuoptError(f"building the capture library failed ({Path(cmd[0]).name}): "
                             f"{first if isinstance(first, str) else first[0]}")
        os.replace(tmp, out)
    except subprocess.TimeoutExpired:
        raise CuoptError(f"building the capture library took over {TIMEOUT_S} s") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out
