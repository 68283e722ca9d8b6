"""`cuopt-train report`: the table, summary and plot of saved `cuopt-train evaluate` results (one
file, or several of the same settings merged), scored again by this cuopt's rules (no GPU needed)."""
from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from cuopt.errors import CuoptError
from cuopt.search.mcts import TIME_STOP
from cuopt.training.commands.evaluate import print_results, write_plot
from cuopt.training.curves import KernelRuns, Run, kernel_json, summary

# what results must share to be merged: the same searches on the same GPU, kernels apart
MUST_AGREE = ("split", "policies", "seeds", "max_evals", "reference_evals", "reference_seed", "device")


def command(
    results: Annotated[list[Path], typer.Argument(help="JSON files written by `cuopt-train evaluate -o`; "
                                                  "several (same settings, other kernels) are merged.")],
    plot: Annotated[Optional[Path], typer.Option(help="Write the curves as an SVG plot.")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Write the results again with the "
                                                "metrics and summary scored now.")] = None,
) -> None:
    """Print the per-kernel table and the summary of saved evaluation results and, optionally,
    plot them: the measured curves are read back and scored by this cuopt's rules (docs/policy.md).
    Several files, of evaluations with the same settings on other kernels, are scored as one."""
    data, kernels = merged(results)
    policies, max_evals, split = data["policies"], data["max_evals"], data["split"]
    print_results(kernels, policies, max_evals, split)
    done = [k for k, complete in kernels if complete]
    if plot is not None:
        write_plot(plot, done, policies, max_evals, split)
    if out is not None:
        data["kernels"] = [{**k, **kernel_json(runs, policies, max_evals)}
                           for k, (runs, _) in zip(data["kernels"], kernels)]  # in order: names may repeat
        data["summary"] = summary(done, policies, max_evals)
        argv = ["cuopt-train", "report", *map(str, results), *(["--plot", str(plot)] if plot else []),
                "-o", str(out)]
        data["report_command"] = shlex.join(argv)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=1) + "\n")


def merged(paths: list[Path]) -> tuple[dict[str, Any], list[tuple[KernelRuns, bool]]]:
    """One file's results as they are; several merged into the first's, kernel by kernel, with
    `merged_from` naming each file's command. They must agree on `MUST_AGREE` and share no kernel."""
    data, kernels = load(paths[0])
    if len(paths) == 1:
        return data, kernels
    data = {**data, "kernels": list(data["kernels"]), "skipped": list(data.get("skipped") or [])}
    owner = {_identity(k): paths[0] for k in data["kernels"]}
    sources = [_source(paths[0], data)]
    for path in paths[1:]:
        more, more_kernels = load(path)
        for key in MUST_AGREE:
            if more.get(key) != data.get(key):
                raise CuoptError(f"{path}: {key} {more.get(key)!r} differs from {paths[0]}'s {data.get(key)!r}; "
                                 "only results of the same settings merge")
        for k in more["kernels"]:
            if _identity(k) in owner:
                raise CuoptError(f"{path}: kernel {k['kernel']} ({k.get('file')}) is also in {owner[_identity(k)]}")
            owner[_identity(k)] = path
        data["kernels"] += more["kernels"]
        data["skipped"] += more.get("skipped") or []
        kernels += more_kernels
        sources.append(_source(path, more))
    data["stopped"] = "; ".join(s["stopped"] for s in sources if s["stopped"])
    data["merged_from"] = sources
    return data, kernels


def _identity(kernel: dict[str, Any]) -> tuple[str, str]:
    return str(kernel.get("file")), str(kernel["kernel"])


def _source(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    return {"file": str(path), "command": data.get("command"), "created": data.get("created"),
            "stopped": data.get("stopped") or ""}


def load(path: Path) -> tuple[dict[str, Any], list[tuple[KernelRuns, bool]]]:
    """The results and, per kernel, its runs and whether every search ran; one error line naming
    the file and the key for anything that is not such a file."""
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise CuoptError(f"{path}: cannot read: {exc.strerror}") from None
    except ValueError as exc:
        raise CuoptError(f"{path}: not a JSON file: {exc}") from None
    try:
        kernels = _kernels(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise CuoptError(f"{path}: not a `cuopt-train evaluate` result: {_what(exc)}") from None
    return data, kernels


def _kernels(data: Any) -> list[tuple[KernelRuns, bool]]:
    if not isinstance(data, dict):
        raise TypeError("expected a JSON object")
    max_evals, reference_evals = int(data["max_evals"]), data["reference_evals"]
    if not isinstance(data["policies"], list) or not isinstance(data["split"], str):
        raise ValueError("policies, split: expected a list and a string")
    out = []
    for i, k in enumerate(data["kernels"]):
        try:
            runs = KernelRuns(str(k["kernel"]), [_run(r, max_evals) for r in k["runs"]])
            if k.get("reference") is not None:
                runs.reference = _run(k["reference"], int(reference_evals))
            complete = bool(k["complete"])
            missing = [p for p in data["policies"] if complete and not runs.of(p)]
            if missing:
                raise ValueError(f"runs: no run of {missing[0]} in a complete kernel")
            out.append((runs, complete))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"kernels[{i}].{_what(exc)}") from None
    return out


def _run(r: dict[str, Any], evals: int) -> Run:
    """A run as `run_json` wrote it; results without `truncated` get it from the stop reason, and
    results without `best` (written before it was recorded) None."""
    points = [float(s) for s in r["curve"]]
    if not points:
        raise ValueError("curve: empty")
    truncated = r.get("truncated")
    if truncated is None:
        truncated = r["stop"] == TIME_STOP and len(points) - 1 < evals
    best = r.get("best")
    if best is not None and (not isinstance(best, list) or not all(isinstance(b, str) for b in best)):
        raise ValueError("best: expected a list of rewrite ids")
    return Run(str(r["policy"]), int(r["seed"]), points, str(r["stop"]), bool(truncated), best)


def _what(exc: Exception) -> str:
    return f"{exc.args[0]}: missing" if isinstance(exc, KeyError) else str(exc)
