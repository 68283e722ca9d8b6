"""Small helpers shared by several test modules."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from typer.testing import CliRunner, Result

from cuopt.cli import app
from cuopt.training.cli import app as train_app

if TYPE_CHECKING:
    from cuopt.source.preprocess import Macros


def cuopt(*args: str) -> Result:
    """Run the CLI in-process."""
    return CliRunner().invoke(app, list(args))


def cuopt_train(*args: str) -> Result:
    """Run the `cuopt-train` CLI in-process."""
    return CliRunner().invoke(train_app, list(args))


def one_error_line(result: Result) -> str:
    """The single line a CuoptError becomes; no traceback anywhere."""
    assert "Traceback" not in result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


@dataclass(frozen=True)
class Action:
    """What the search and the policies read of a rewrite."""

    id: str
    rule: str
    line: int


@dataclass(frozen=True)
class Offer:
    action: Action


def saxpy_corpus(samples: Path, dest: Path, split: str, n: int) -> Path:
    """A corpus directory holding saxpy at size n, its manifest putting it in `split`."""
    dest.mkdir()
    (dest / "saxpy.cu").write_text((samples / "saxpy.cu").read_text())
    spec = (samples / "saxpy.cuopt.toml").read_text().replace("n = 67108864", f"n = {n}")
    (dest / "saxpy.cuopt.toml").write_text(spec.replace("{ n = 1000003 }", "{ n = 1003 }"))
    (dest / "manifest.json").write_text(json.dumps({"kernels": [{"name": "saxpy", "split": split}]}))
    return dest


def macro_table(objects: dict[str, str] | None = None,
                functions: dict[str, tuple[tuple[str, ...], str]] | None = None) -> Macros:
    """A macro table given by hand (as if the preprocessor had read these `#define`s; none of them is
    overridable with -D, since no file stands behind them)."""
    from cuopt.source.preprocess import Definition, Macros

    return Macros(tuple(Definition(n, None, b) for n, b in (objects or {}).items())
                  + tuple(Definition(n, p, b) for n, (p, b) in (functions or {}).items()))


def kernel_text(source: bytes, name: str) -> str:
    """The definition of kernel `name` in `source`, as written."""
    from cuopt.source.kernels import load

    k = load(source).kernel(name)
    assert k is not None, name
    return k.node.text.decode()
