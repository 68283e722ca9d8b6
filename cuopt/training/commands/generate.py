"""`cuopt-train generate`: write the training corpus of the learned policy."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, Optional

import typer


def command(
    out_dir: Annotated[Path, typer.Argument(help="Directory for the kernels, their specs and manifest.json.")],
    count: Annotated[int, typer.Option("--count", "-n", min=1, help="How many kernels.")] = 300,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Generator seed: the same seed and count always "
                                      "give the same files.")] = 0,
    families: Annotated[Optional[str], typer.Option("--families", help="Only these families, comma-separated: "
                                                    "elementwise, reduction, stencil, matmul, transpose, "
                                                    "histogram (default: all).")] = None,
    spelled: Annotated[bool, typer.Option("--spellings", help="Also write each kernel in every spelling that "
                                          "applies to it (parenthesized guards, counters declared first, "
                                          "macro types and sizes, accumulation into global memory, ...).")] = False,
    force: Annotated[bool, typer.Option("--force", help="Write into a non-empty directory, replacing a previous "
                                        "corpus there.")] = False,
) -> None:
    """Generate naive CUDA kernels with their specs (one thread per output, global memory only), the
    corpus the learned policy trains on; with --spellings, each also as older code spells it. About one kernel in six is held out, chosen by a hash of its
    name, so a kernel never changes split when the corpus grows (docs/policy.md)."""
    # deferred: the corpus loads the parser (tree-sitter) when the command runs, not for --help
    from cuopt.training.corpus import families_from, generate, spelled as with_spellings, write

    kernels = generate(count, seed, families_from(families))
    if spelled:
        kernels = with_spellings(kernels)
    write(kernels, out_dir, seed, force=force)
    per_family = Counter(k.family for k in kernels)
    held = sum(k.split == "heldout" for k in kernels)
    typer.echo(f"wrote {len(kernels)} kernels to {out_dir} "
               f"({', '.join(f'{f} {c}' for f, c in per_family.items())}; {held} held out)")
