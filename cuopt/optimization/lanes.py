"""The GPUs one search measures its candidates on: its own, and the idle GPUs of the machine that it
borrows for a batch of candidates (`--gpus` with more GPUs than kernels at work). Each borrowed GPU
holds the kernel's problems and reference, and times the original once: a candidate timed there
counts as its time times the search GPU's baseline over that GPU's, so that GPUs of slightly
different speed never mislead the search. Confirmation stays on the search's own GPU."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from cuopt.evaluate.evaluator import KernelEvaluator, Outcome, Variant


class Lender(Protocol):
    """Idle GPUs a search may use for one batch of candidates."""

    def borrow(self) -> list[Any]:
        """The stations (`jobs.Station`) idle now that no waiting search needs; none is fine."""
        ...

    def give_back(self, stations: list[Any]) -> None: ...


@dataclass
class Lane:
    """One GPU a batch's candidates are measured on; `scale` turns its times into the search GPU's."""

    evaluator: KernelEvaluator
    label: str = ""  # "" for the search's own GPU
    scale: float = 1.0

    def measure(self, variant: Variant, compiled: Any) -> Outcome:
        outcome = self.evaluator.evaluate(variant, compiled)
        if outcome.timing is not None:
            outcome.timing = outcome.timing.scaled(self.scale)
        return outcome


class Lanes:
    """The search's own lane, plus lanes on GPUs borrowed from `lender` batch by batch (set up the
    first time a GPU is lent, kept until the search ends)."""

    def __init__(self, own: KernelEvaluator, lender: Lender | None = None) -> None:
        self.own = Lane(own)
        self.lender = lender
        self.original: tuple[Variant, Any, float] | None = None  # variant, compiled, baseline ms
        self.borrowed: list[Any] = []
        self.lanes: dict[str, Lane | None] = {}  # by station label; None where the GPU cannot serve
        self.notes: list[str] = []  # why a lent GPU was not used (the trace's `lent_gpus`)

    def set_original(self, variant: Variant, compiled: Any, baseline_ms: float) -> None:
        self.original = (variant, compiled, baseline_ms)

    def borrow(self) -> list[Any]:
        """Borrow the idle GPUs for one batch; give them back with `give_back`."""
        if self.lender is None or self.original is None:
            return []
        self.borrowed = self.lender.borrow()
        return self.borrowed

    def lane(self, station: Any) -> Lane | None:
        """The lane on a borrowed station, set up on first use (from the thread that will measure on
        it); None when that GPU cannot run this search's cubins or its original fails there."""
        if station.label in self.lanes:
            return self.lanes[station.label]
        assert self.original is not None
        variant, compiled, base_ms = self.original
        own = self.own.evaluator
        lane = None
        try:
            client = station.open()
            arch, own_arch = (client.device or {}).get("arch"), (own.client.device or {}).get("arch")
            if arch != own_arch:
                self.notes.append(f"GPU {station.label} is {arch}, not {own_arch}: not used")
            else:
                ev = own.sibling(timing=own.timing, seed=own.seed, client=client)
                ref = ev.set_reference(compiled, variant.launch, variant.source)
                base = ev.evaluate(variant, compiled) if ref.ok else ref
                if base.ok and base.timing is not None:
                    lane = Lane(ev, station.label, base_ms / base.timing.median_ms)
                else:
                    ev.close()
                    self.notes.append(f"GPU {station.label}: the original failed there ({base.status}): not used")
        except Exception as exc:  # a GPU that cannot start serves no candidate; the search goes on
            self.notes.append(f"GPU {station.label}: {type(exc).__name__}: {exc}: not used")
        self.lanes[station.label] = lane
        return lane

    def give_back(self) -> None:
        if self.lender is not None and self.borrowed:
            self.lender.give_back(self.borrowed)
        self.borrowed = []

    def close(self) -> None:
        """Free the kernel's problems on every GPU it borrowed (the worker clients serialise requests,
        so a GPU another search now uses is safe to talk to)."""
        for lane in self.lanes.values():
            if lane is not None:
                lane.evaluator.close()
        self.lanes = {}
