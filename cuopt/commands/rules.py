"""`cuopt rules`: list the rewrite rules, or show one."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from cuopt.errors import CuoptError


def command(
    action: Annotated[Optional[str], typer.Argument(help="`show` to print one rule.")] = None,
    rule_id: Annotated[Optional[str], typer.Argument(metavar="ID", help="The rule to show.")] = None,
) -> None:
    """List the rewrite rules (`cuopt rules`), or print one with its parameters and tests
    (`cuopt rules show ID`)."""
    # deferred: loaded when the command runs, not at `cuopt --help`
    from rich.table import Table

    from cuopt import ui
    from cuopt.rewrite.engine import Engine

    rules = Engine.default().rules
    out = ui.console()
    if action is None:
        table = Table(title=f"{len(rules)} rewrite rules")
        for col in ("id", "title", "parameters", "launch", "transform"):
            table.add_column(col)
        for r in rules.values():
            params = "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in r.params.items()) or "-"
            table.add_row(r.id, r.title, params, "changes" if r.changes_launch else "kept", r.transform)
        out.print(table)
        return
    if action != "show" or rule_id is None:
        raise CuoptError("usage: cuopt rules [show ID]")
    if rule_id not in rules:
        raise CuoptError(f"no rule {rule_id!r}; rules: {', '.join(rules)}")
    r = rules[rule_id]
    out.print(f"[bold]{r.id}[/bold]: {r.title}")
    out.print(r.why, markup=False)
    out.print(f"transform: {r.transform}   prior: {r.prior}   launch: {'changes' if r.changes_launch else 'kept'}"
              + (f"   opt-in: {', '.join(r.requires)}" if r.requires else ""), markup=False)
    for k, v in r.params.items():
        out.print(f"param {k}: {', '.join(map(str, v))}", markup=False)
    if r.match.get("query"):
        out.print(f"match: {r.match['query']}  conditions: {', '.join(r.match.get('conditions', []))}", markup=False)
    out.print(f"tests: {sum(not t.refuse for t in r.tests)} must rewrite, {sum(t.refuse for t in r.tests)} "
              f"must leave alone   file: {r.path}", markup=False)
