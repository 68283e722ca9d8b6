"""`cuopt train ...`: build the learned policy (a corpus of kernels, self-play data on the GPU,
training on the CPU). One module per subcommand, registered here."""
from __future__ import annotations

from typing import Any, Callable

from cuopt.commands.train import collect
from cuopt.commands.train import evaluate
from cuopt.commands.train import fit
from cuopt.commands.train import generate
from cuopt.commands.train import report

SUBCOMMANDS: dict[str, Callable[..., Any]] = {
    "collect": collect.command,
    "evaluate": evaluate.command,
    "fit": fit.command,
    "generate": generate.command,
    "report": report.command,
}
