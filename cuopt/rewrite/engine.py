"""The generic rewrite engine: loads rules, offers actions (rule + site + params), applies them and
checks every result (it parses cleanly, the kernel and its signature are unchanged)."""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, replace
from typing import Any

from cuopt.errors import CuoptError
from cuopt.resources import data_dir
from cuopt.rewrite.context import Context, Refuse, RewriteError, Rewritten
from cuopt.rewrite.normalize import lean, lean_note, normalize
from cuopt.rewrite.pins import instance, pin_types
from cuopt.rewrite.rule import Rule, RuleError, load_rules
from cuopt.rewrite.transforms import TRANSFORMS
from cuopt.source.analysis import unreached
from cuopt.source.kernels import load
from cuopt.source.parse import text
from cuopt.source.templates import instantiations
from cuopt.spec.model import OPT_INS


@dataclass(frozen=True)
class Action:
    rule: str
    params: tuple[tuple[str, Any], ...]
    line: int
    column: int

    @property
    def id(self) -> str:
        """Stable for the same source: rule, site position and parameters."""
        suffix = "/" + ",".join(f"{k}={v}" for k, v in self.params) if self.params else ""
        return f"{self.rule}@{self.line}:{self.column}{suffix}"

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)


@dataclass(frozen=True)
class Offer:
    action: Action
    result: Rewritten
    changes_launch: bool
    note: str = ""


@dataclass(frozen=True)
class Finding:
    rule: str
    line: int
    column: int
    message: str


@dataclass
class Refusal:
    rule: str
    line: int | None
    reason: str


@dataclass
class Engine:
    rules: dict[str, Rule] = field(default_factory=dict)

    @staticmethod
    def default() -> Engine:
        rules = load_rules(data_dir("rules"))
        for rule in rules.values():
            if rule.transform not in TRANSFORMS:
                raise RuleError(f"{rule.id}/{rule.path.name}: unknown transform {rule.transform!r}; "
                                f"known: {', '.join(sorted(TRANSFORMS))}")
        return Engine(rules)

    @property
    def priors(self) -> dict[str, float]:
        """Each rule's declared prior, by rule id (what the heuristic policy weighs offers by)."""
        return {r.id: r.prior for r in self.rules.values()}

    def offers(self, ctx: Context, *, only: set[str] | None = None, keep_launch: bool = False,
               refusals: list[Refusal] | None = None) -> list[Offer]:
        """Every applicable rewrite of the kernel, each already applied and checked. Lines in actions,
        notes and refusals are the file's, though the rules read the kernel's normal form."""
        work = normalize(ctx)
        lines = LineMap.between(ctx, work)
        if refusals is None:
            return self._offers(ctx, work, lines, only, keep_launch, None)
        found: list[Refusal] = []
        out = self._offers(ctx, work, lines, only, keep_launch, found)
        refusals += [replace(r, line=r.line and lines.line(r.line), reason=lines.text(r.reason)) for r in found]
        return out

    def _offers(self, ctx: Context, work: Context, lines: LineMap, only: set[str] | None, keep_launch: bool,
                refusals: list[Refusal] | None) -> list[Offer]:
        out: list[Offer] = []
        seen: set[str] = set()
        normalized: tuple[Spans, Spans] | None = None  # what the normal form changes, when first needed
        unreadable = _conditional(ctx) or _aliased(ctx) or block_tie_mismatch(work)
        retiled = _retiled(ctx, work) if work.launch != ctx.launch else None
        leaned = work if keep_launch or unreadable is not None else lean(work)
        written_lean = replace(ctx, launch=leaned.launch, given=ctx.launch) \
            if leaned is not work and work.launch == ctx.launch else None
        for rule in self.rules.values():
            if only is not None and rule.id not in only:
                continue
            if unreadable is not None:
                _note(refusals, rule.id, None, unreadable)
                continue
            missing = [o for o in rule.requires if o not in ctx.enabled_options]
            if missing:
                _note(refusals, rule.id, None, _opt_in_hint(missing))
                continue
            transform = TRANSFORMS[rule.transform]
            view, written = (leaned, written_lean) if rule.changes_launch and leaned is not work else (work, ctx)
            try:
                sites = transform.sites(view, rule)
            except Refuse as exc:
                _note(refusals, rule.id, None, str(exc))
                continue
            except Exception as exc:  # a bug in one transform loses its rule, not the command
                _note(refusals, rule.id, None, _crashed(exc))
                continue
            if not sites:
                _note(refusals, rule.id, None, "no site matches")
            as_written = _sites_as_written(written, view, transform, rule, sites) if written is not None \
                else [None] * len(sites)
            if normalized is None and any(as_written):
                normalized = _normalized_spans(ctx, work)
            for site, plain in zip(sites, as_written):
                cold = unreached(view.model, site.node, view.kernel.body, view.size_envs)
                if cold is not None:
                    _note(refusals, rule.id, site.line, f"the code here runs only where `{text(cold[0])}` is "
                          f"{str(cold[1]).lower()}, which it is at none of the spec's sizes: nothing measures it")
                    continue
                for params in rule.param_sets():
                    action = Action(rule.id, tuple(params.items()), lines.line(site.line), site.column)
                    try:
                        result = finish(view, transform.apply(view, rule, site, params))
                        verify(ctx, result, rule)
                    except (Refuse, RewriteError) as exc:
                        _note(refusals, rule.id, site.line, f"{action.id}: {exc}")
                        continue
                    except Exception as exc:  # as above: the other rules' offers stand
                        _note(refusals, rule.id, site.line, f"{action.id}: {_crashed(exc)}")
                        continue
                    kept = _as_written(written or ctx, transform, rule, plain, params, result, view,
                                       normalized or ([], []))
                    result = replace(result, summary=lines.text(result.summary)) if kept is result else kept
                    if retiled is not None:  # the diff's loop went in the normal form: say so
                        result = replace(result, summary=f"{retiled}; {result.summary}")
                    if view is leaned and leaned is not work:  # the copies went: say so
                        result = replace(result, summary=f"{lean_note(leaned)}; {result.summary}")
                    if result.source in (ctx.source, work.source) and result.launch == ctx.launch or \
                            (result.source, result.launch) == (work.source, work.launch):
                        continue
                    conflict = template_launch_conflict(ctx, result) or block_tie_conflict(view, result)
                    if conflict is not None:
                        _note(refusals, rule.id, site.line, f"{action.id}: {conflict}")
                        continue
                    if keep_launch and result.launch != ctx.launch:
                        _note(refusals, rule.id, site.line, f"{action.id}: changes the launch (--keep-launch)")
                        continue
                    if action.id in seen:
                        continue
                    seen.add(action.id)
                    out.append(Offer(action, result, result.launch != ctx.launch, lines.text(site.note)))
        return out

    def findings(self, ctx: Context) -> list[Finding]:
        """Sites of lint rules where a rewrite applies: likely wins, for `cuopt check`."""
        lint = {r.id for r in self.rules.values() if r.lint}
        out: dict[tuple[str, int, int], Finding] = {}
        for offer in self.offers(ctx, only=lint):
            a = offer.action
            out.setdefault((a.rule, a.line, a.column), Finding(a.rule, a.line, a.column, offer.note or
                                                               self.rules[a.rule].title))
        return sorted(out.values(), key=lambda f: (f.line, f.column, f.rule))

    def apply(self, ctx: Context, action_id: str, **kwargs: Any) -> Offer:
        offers = self.offers(ctx, **kwargs)
        for offer in offers:
            if offer.action.id == action_id:
                return offer
        available = ", ".join(o.action.id for o in offers[:12]) or "none"
        raise CuoptError(f"rewrite {action_id!r} does not apply to kernel {ctx.kernel_name} "
                         f"(applicable: {available}{', ...' if len(offers) > 12 else ''})")


def _sites_as_written(ctx: Context, work: Context, transform: Any, rule: Rule, sites: list[Any]) -> list[Any]:
    """For each site found on the normal form, the same site in the kernel as written, where the rule
    finds the same sites there (same kinds, in the same order); else None. None for all where the
    normal form runs under another launch (a tile-row loop): the kernel as written does not mean
    there what the rule read."""
    if work.source == ctx.source or work.launch != ctx.launch:
        return [None] * len(sites)
    try:
        plain = transform.sites(ctx, rule)
    except Refuse:
        return [None] * len(sites)
    if [s.node.type for s in plain] != [s.node.type for s in sites]:
        return [None] * len(sites)
    return list(plain)


Spans = list[tuple[int, int]]


def _normalized_spans(ctx: Context, work: Context) -> tuple[Spans, Spans]:
    """The byte ranges (whole lines) the normal form changes: in the kernel as written, and in the
    normal form."""
    before, after = (_kernel_lines(c) for c in (ctx, work))
    changed = [op for op in _line_ops(before[0], after[0]) if op[0] != "equal"]
    return ([(before[1][i1], before[1][i2]) for _, i1, i2, _, _ in changed],
            [(after[1][j1], after[1][j2]) for _, _, _, j1, j2 in changed])


def _line_ops(before: list[bytes], after: list[bytes]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes from the kernel's lines as written to its lines in the normal form."""
    return difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()


_LINE_NUMBERS = re.compile(r"\b(lines? )(\d+(?:(?:, | and )\d+)*)")


@dataclass(frozen=True)
class LineMap:
    """Lines of the kernel's normal form as lines of the file: what the rules say names the line the
    user wrote (a line the normal form rewrote names the first line of what it replaced)."""

    first: int  # the kernel's first line, the same in both (the normal form edits only the body)
    ops: tuple[tuple[str, int, int, int, int], ...]
    shift: int  # lines after the kernel: the file's minus the normal form's
    moved: bool

    @classmethod
    def between(cls, ctx: Context, work: Context) -> LineMap:
        first = ctx.kernel.node.start_point.row + 1
        if work.source == ctx.source:
            return cls(first, (), 0, False)
        before, after = _kernel_lines(ctx)[0], _kernel_lines(work)[0]
        ops = tuple(_line_ops(before, after))
        moved = any(tag != "equal" and i2 - i1 != j2 - j1 for tag, i1, i2, j1, j2 in ops)
        return cls(first, ops, len(before) - len(after), moved)

    def line(self, line: int) -> int:
        k = line - self.first
        for tag, i1, _, j1, j2 in self.ops:
            if j1 <= k < j2:
                return self.first + (i1 + k - j1 if tag == "equal" else i1)
        return line + self.shift if self.ops and k >= self.ops[-1][4] else line

    def text(self, message: str) -> str:
        """`message` with each `line N` / `lines N, M and K` in it mapped."""
        if not self.moved:
            return message
        return _LINE_NUMBERS.sub(lambda m: m[1] + re.sub(r"\d+", lambda d: str(self.line(int(d[0]))), m[2]), message)


def _kernel_lines(ctx: Context) -> tuple[list[bytes], list[int]]:
    """The kernel's lines and the byte offset where each starts (and where the last ends)."""
    node = ctx.kernel.node
    lines = ctx.source[node.start_byte:node.end_byte].splitlines(keepends=True)
    starts = [node.start_byte]
    for line in lines:
        starts.append(starts[-1] + len(line))
    return lines, starts


def _edited(before: bytes, after: bytes, spans: Spans) -> bool:
    """Whether the bytes `after` changes in `before` (one range, from the first difference to the
    last) meet any of `spans`."""
    first = 0
    while first < min(len(before), len(after)) and before[first] == after[first]:
        first += 1
    tail = 0
    while tail < min(len(before), len(after)) - first and before[-1 - tail] == after[-1 - tail]:
        tail += 1
    last = len(before) - tail
    return any(i1 <= last and first <= i2 for i1, i2 in spans)


def _as_written(ctx: Context, transform: Any, rule: Rule, site: Any, params: dict[str, Any],
                result: Rewritten, work: Context, normalized: tuple[Spans, Spans]) -> Rewritten:
    """The rewrite applied to the kernel as written, where the rule reads it there too, lands on the
    same launch, and neither rewrite edits code the normal form changes (the rule then read the same
    text both ways): the file changes only where the rewrite does, and the user's spelling of the
    rest stays. Otherwise `result`, the rewrite of the normal form."""
    if site is None or _edited(work.source, result.source, normalized[1]):
        return result
    try:
        plain = finish(ctx, transform.apply(ctx, rule, site, params))
        verify(ctx, plain, rule)
    except (Refuse, RewriteError):
        return result
    if plain.launch != result.launch or plain.source == ctx.source and ctx.given is None or \
            _edited(ctx.source, plain.source, normalized[0]):
        return result
    return plain


def _retiled(ctx: Context, work: Context) -> str:
    """What the normal form did to a tile-row loop (cuopt/source/tile_rows.py), for a rewrite's summary."""
    block = "x".join(map(str, work.launch.block))
    return f"read as one tile row a thread (the {'x'.join(map(str, ctx.launch.block))} block's row loop, as {block})"


def finish(ctx: Context, result: Rewritten) -> Rewritten:
    """A transform's result with the engine's own edits: launch bounds kept in step, types pinned."""
    return pin_types(ctx, sync_launch_bounds(ctx, result))


def sync_launch_bounds(ctx: Context, result: Rewritten) -> Rewritten:
    """A rewrite that changes the block must not leave a smaller `__launch_bounds__` behind."""
    threads = result.launch.block3[0] * result.launch.block3[1] * result.launch.block3[2]
    if result.launch.block3 == ctx.launch.block3:
        return result
    kernel = load(result.source, ctx.macros).kernel(ctx.kernel_name)
    bounds = next((c for c in kernel.node.children if c.type == "launch_bounds"), None) if kernel else None
    if bounds is None or not bounds.named_children or bounds.named_children[0].type != "number_literal":
        return result
    first = bounds.named_children[0]
    if first.text == str(threads).encode():
        return result
    source = result.source[:first.start_byte] + str(threads).encode() + result.source[first.end_byte:]
    return replace(result, source=source)


def _conditional(ctx: Context) -> str | None:
    """Why the kernel is not rewritten: it parses only as the preprocessor leaves it."""
    if not ctx.kernel.conditional:
        return None
    return (f"{ctx.kernel.entry} parses only as the preprocessor leaves it (#if/#ifdef branches taken, CUDA's "
            "__align__): cuopt reads and times it, but rewriting it would drop what the preprocessor drops")


def _aliased(ctx: Context) -> str | None:
    """Why the kernel is not rewritten: the program passes one buffer for several of its arguments,
    which validation (with distinct buffers) cannot stand for."""
    if ctx.spec is None or not ctx.spec.aliased:
        return None
    return (f"the program passes one buffer for {' and '.join(ctx.spec.aliased)} (the spec's `aliased`): cuopt "
            "validates with distinct buffers, so a rewrite could be right there and wrong in the program")


def block_tie_mismatch(ctx: Context) -> str | None:
    """Why the kernel's analysis does not hold at its launch: it takes a constant for blockDim
    (`blockIdx.x * TILE + threadIdx.x`, a template argument) that the launch's block does not equal.
    None when every such tie holds."""
    for axis, name in ctx.model.block_ties.items():
        value = ctx.tie_value(name)
        if value != ctx.launch.block3[axis]:
            return (f"the kernel takes {name} = {value} for blockDim.{'xyz'[axis]}, but the launch's block is "
                    f"{'x'.join(map(str, ctx.launch.block))}")
    return None


def block_tie_conflict(ctx: Context, result: Rewritten) -> str | None:
    """Why a rewrite may not change the block: the rewritten kernel still takes a constant for
    blockDim along an axis whose block it changes. None when it may."""
    if result.launch.block3 == ctx.launch.block3 or not ctx.model.block_ties:
        return None
    after = replace(ctx, source=result.source, launch=result.launch).model.block_ties
    for axis, name in after.items():
        if result.launch.block3[axis] != ctx.launch.block3[axis]:
            return f"changes the block, but the kernel takes {name} for blockDim.{'xyz'[axis]}"
    return None


def template_launch_conflict(ctx: Context, result: Rewritten) -> str | None:
    """Why a template instantiation's rewrite may not change the launch: the block size is a
    template argument, or the file launches other instantiations that would keep the old launch
    while sharing the rewritten body. None when it may."""
    kernel = ctx.kernel
    if kernel.instantiation is None or result.launch == ctx.launch:
        return None
    if result.launch.block3 != ctx.launch.block3:
        if ctx.model.block_ties:
            axis, name = next(iter(ctx.model.block_ties.items()))
            return f"changes the block, but {kernel.entry} takes template argument {name} for blockDim.{'xyz'[axis]}"
        block = ctx.launch.block3
        sizes = {d for d in block if d > 1} | {block[0] * block[1] * block[2]}
        tied = next(((n, v) for n, v in kernel.constants if v in sizes), None)
        if tied is not None:
            return (f"changes the block, but the block size is template argument {tied[0]} = {tied[1]} "
                    f"of {kernel.entry}")
    others = [e for e in (_entry(ctx, str(i)) for i, _, _ in instantiations(ctx.file.tree.root_node, kernel.name))
              if e != kernel.entry]
    if others:
        return (f"changes the launch, but the file also instantiates {others[0]}, which shares the "
                "template's body and keeps its own launch")
    return None


def _entry(ctx: Context, instantiation: str) -> str:
    """An instantiation the file makes, with its default arguments filled in (as written when it
    does not fit the template: nvcc reports that)."""
    kernel = instance(ctx, instantiation)
    return kernel.entry if kernel is not None else instantiation


def verify(ctx: Context, result: Rewritten, rule: Rule) -> None:
    """The rewritten file must parse without new errors, keep the kernel's signature and leave
    everything outside the kernel's definition byte for byte as it was."""
    node, before, after = ctx.kernel.node, ctx.source, result.source
    tail = len(before) - node.end_byte
    if after[:node.start_byte] != before[:node.start_byte] or after[len(after) - tail:] != before[node.end_byte:]:
        raise RewriteError(f"rule {rule.id} changed code outside kernel {ctx.kernel_name}")
    new = load(result.source, ctx.macros)
    kernel = new.kernel(ctx.kernel_name)
    if kernel is None:
        raise RewriteError(f"rule {rule.id} removed kernel {ctx.kernel_name}")
    if kernel.errors:
        e = kernel.errors[0]
        raise RewriteError(f"rule {rule.id} produced code that does not parse (line {e.line}:{e.column}: {e.message})")
    if kernel.signature != ctx.kernel.signature:
        raise RewriteError(f"rule {rule.id} changed the signature of {ctx.kernel_name}")


def _opt_in_hint(missing: list[str]) -> str:
    keys = {option: key for key, option in OPT_INS.items()}
    return "opt-in: needs " + ", ".join(f"--{o}" + (f" or {keys[o]} = true in the spec" if o in keys else "")
                                        for o in missing)


CRASHED = "internal error in the transform"


def _crashed(exc: Exception) -> str:
    return f"{CRASHED} ({type(exc).__name__}: {exc}); please report it with the kernel"


def _note(refusals: list[Refusal] | None, rule: str, line: int | None, reason: str) -> None:
    if refusals is not None:
        refusals.append(Refusal(rule, line, reason))
