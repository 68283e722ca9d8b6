"""`cuopt-train fit`: train the learned policy on self-play data (CPU)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cuopt import ui
from cuopt.errors import CuoptError


def command(
    datasets: Annotated[list[Path], typer.Argument(help="JSON Lines files written by `cuopt-train collect`.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The weights file to write, as safetensors (metadata "
                                      "and metrics go next to it as .json).")] = Path("models/policy.safetensors"),
    epochs: Annotated[int, typer.Option(help="Passes over the training rows.")] = 20,
    seed: Annotated[int, typer.Option(help="Initialisation and shuffling seed (same data, same model).")] = 0,
    lr: Annotated[float, typer.Option(help="AdamW learning rate.")] = 1e-3,
    validation: Annotated[float, typer.Option(help="Set this share of the training kernels aside (by name "
                                              "hash) and report on them each epoch; 0 trains on all.")] = 0.0,
    mix: Annotated[float, typer.Option(help="Weight of the measured advantages in the policy target; the "
                                       "rest goes to the search's visit counts.")] = 0.75,
    subtree_credit: Annotated[float, typer.Option(help="Share of the further gain found below a rewrite "
                                                  "that counts as the rewrite's own.")] = 0.5,
    ignore_unmeasured: Annotated[bool, typer.Option(help="Leave children the search neither measured nor "
                                                    "visited out of the policy loss (--no-ignore-unmeasured: "
                                                    "they count as worth nothing).")] = True,
    uniform_blend: Annotated[float, typer.Option(help="Search-time share of uniform priors blended into "
                                                 "the network's; the model file carries it.")] = 0.0,
) -> None:
    """Train the policy network on the "train" rows (policy cross-entropy towards visits mixed with
    measured advantages, value squared error); report held-out loss and top-1 agreement per epoch."""
    try:
        # deferred: torch loads for this command only, and its absence is this command's error
        from cuopt.training.fit import FitConfig, run
    except ImportError as exc:
        raise CuoptError(f"cuopt-train fit needs PyTorch: {exc} (pip install 'cuopt[train]' or torch)") from None

    if epochs < 1:
        raise CuoptError("--epochs must be at least 1")
    if not lr > 0:
        raise CuoptError("--lr must be > 0")
    if not 0 <= validation < 1:
        raise CuoptError(f"--validation {validation:g}: expected a share from 0 up to (not including) 1")
    for name, value in (("--mix", mix), ("--subtree-credit", subtree_credit), ("--uniform-blend", uniform_blend)):
        if not 0 <= value <= 1:
            raise CuoptError(f"{name} {value:g}: expected a share from 0 to 1")
    console = ui.console()
    run(datasets, out, FitConfig(epochs=epochs, lr=lr, seed=seed, validation=validation, mix=mix,
                                 subtree_credit=subtree_credit, ignore_unmeasured=ignore_unmeasured),
        lambda line: console.print(line, markup=False, highlight=False), uniform_blend=uniform_blend)
