"""`python -m cuopt.training`: the `cuopt-train` command."""
from __future__ import annotations

from cuopt.training.cli import main

if __name__ == "__main__":
    main()
