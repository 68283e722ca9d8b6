"""`python -m cuopt`."""
from __future__ import annotations

from cuopt.cli import main

if __name__ == "__main__":
    main()
