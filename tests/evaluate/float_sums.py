"""numpy emulations of float32 sums as kernels compute them, for the accuracy criterion's tests and
its constants (docs/evaluator.md): `python -m tests.evaluate.float_sums` prints the measurements."""
from __future__ import annotations

import numpy as np

N = 16384  # terms per sum
ROWS = 1024  # independent sums (matrix rows)


def terms(lo: float, seed: int = 1, rows: int = ROWS, n: int = N + 1) -> np.ndarray:
    """float32 uniform(lo, 1) terms, one row per sum (one extra column: the next row's first term)."""
    rng = np.random.default_rng(seed)
    return (rng.random((rows, n)) * (1.0 - lo) + lo).astype(np.float32)


def sequential(t: np.ndarray) -> np.ndarray:
    """acc += t[j], j = 0, 1, ...: one thread per row."""
    acc = np.zeros(t.shape[0], np.float32)
    for j in range(t.shape[1]):
        acc = acc + t[:, j]
    return acc


def tree(t: np.ndarray) -> np.ndarray:
    """Pairwise halving (a shared-memory or shuffle tree over a power-of-two count)."""
    s = t
    while s.shape[1] > 1:
        half = s.shape[1] // 2
        s = s[:, :half] + s[:, half:]
    return s[:, 0]


def strided(t: np.ndarray, lanes: int) -> np.ndarray:
    """Each of `lanes` threads sums every lanes-th term sequentially, then a tree: a warp (32) or a
    block (256) per row."""
    partial = np.zeros((t.shape[0], lanes), np.float32)
    for j in range(0, t.shape[1], lanes):
        partial = partial + t[:, j:j + lanes]
    return tree(partial)


def in_order(partials: np.ndarray, order: np.ndarray) -> np.ndarray:
    """acc += partials[:, k] for k in `order`: per-block partial sums added to one result with
    float atomics, in the order the blocks happened to finish."""
    acc = np.zeros(partials.shape[0], np.float32)
    for k in order:
        acc = acc + partials[:, k]
    return acc


def order_disagreement(elements: int, trials: int = 100, blocks: int = 32768) -> float:
    """How often one of two atomic-order sums of the same block partials is more than FACTOR times
    less accurate than the other (per element or norm-wise, beyond the floor), for outputs of
    `elements` such sums."""
    from cuopt.evaluate.accuracy import error, judge

    rng = np.random.default_rng(elements)
    bad = 0
    for _ in range(trials):
        partials = (rng.random((elements, blocks)) * 256).astype(np.float32)
        ref = partials.astype(np.float64).sum(axis=1)
        first, second = (in_order(partials, rng.permutation(blocks)) for _ in range(2))
        bad += not judge(second, ref, error(first, ref), "float32").within_factor
    return bad / trials


def variants(lo: float, seed: int = 1, rows: int = ROWS) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The float64 sums and each emulated kernel's float32 result."""
    t = terms(lo, seed, rows)
    own = t[:, :N]
    return own.astype(np.float64).sum(axis=1), {
        "sequential": sequential(own), "tree": tree(own), "warp per row": strided(own, 32),
        "block per row": strided(own, 256), "drops the last term": sequential(own[:, :N - 1]),
        "reads one past the row": sequential(t[:, 1:N + 1])}


def main() -> None:
    from cuopt.evaluate.accuracy import error

    for lo in (0.0, -1.0):
        ref, outs = variants(lo)
        base = error(outs["sequential"], ref)
        print(f"uniform({lo:g}, 1), {ROWS} sums of {N} terms")
        for name, out in outs.items():
            e = error(out, ref)
            print(f"  {name:24s} max rel {e.max_rel:9.3g}  norm {e.norm:9.3g}  "
                  f"/ sequential: {e.max_rel / base.max_rel:7.3g} {e.norm / base.norm:7.3g}")
    ratios = []
    for seed in range(200):  # single sums: how often a dropped term hides in the sequential sum's error
        ref, outs = variants(0.0, seed=100 + seed, rows=1)
        ratios.append(error(outs["drops the last term"], ref).max_rel / error(outs["sequential"], ref).max_rel)
    r = np.array(ratios)
    print(f"single sums, uniform(0, 1), 200 seeds: dropped / sequential error below 4 in {np.mean(r < 4):.1%}, "
          f"median {np.median(r):.3g}")
    for elements in (1, 4, 16, 32):
        print(f"{elements:2d} atomic-order sums of 32768 partials, two orders: more than 4x apart in "
              f"{order_disagreement(elements):.0%} of 100 trials")


if __name__ == "__main__":
    main()
