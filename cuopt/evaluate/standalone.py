"""Run one kernel once in this process, for tools that wrap a process (compute-sanitizer).

Usage: python -m cuopt.evaluate.standalone REQUEST.pickle
The request holds the instance, the kernel (cubin, symbol) and the launch dims."""
from __future__ import annotations

import pickle
import sys

from cuopt.evaluate.backend import create
from cuopt.evaluate.worker import Worker


def main(path: str) -> int:
    with open(path, "rb") as f:
        request = pickle.load(f)
    backend = create(request.get("backend", "pycuda"))
    try:
        worker = Worker(backend)
        worker.prepare("run", request["instance"])
        worker.run("run", request["kernel"], request["launch"], "reference", {})
    finally:
        backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
