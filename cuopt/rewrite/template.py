"""The generic transform for rules whose fix is a text template."""
from __future__ import annotations

from typing import Any

from cuopt.rewrite.conditions import CONDITIONS
from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, apply, indent_of, unbraced_body
from cuopt.rewrite.rule import Rule, RuleError
from cuopt.source.parse import captures


class TemplateTransform:
    """Sites: captures of [match] query inside the kernel that satisfy [match] conditions.
    Fix: `insert_line_before` (a line above the site, same indentation) or `replace` (the site's text)."""

    def sites(self, ctx: Context, rule: Rule) -> list[Site]:
        found = captures(rule.match["query"], ctx.kernel.node)
        name = rule.match.get("capture") or next(iter(found), None)
        out = []
        for node in sorted(found.get(name, []) if name else [], key=lambda n: n.start_byte):
            if self._failed(ctx, rule, node, {}, rule.match.get("conditions", [])) is None:
                out.append(Site(node))
        return out

    def apply(self, ctx: Context, rule: Rule, site: Site, params: dict[str, Any]) -> Rewritten:
        conditions = list(rule.match.get("conditions", []))
        for key, value in params.items():
            conditions += rule.match.get("when", {}).get(f"{key}={value}", [])
        reason = self._failed(ctx, rule, site.node, params, conditions)
        if reason:
            raise Refuse(reason)
        rendered = {k: str(rule.fix.get("render", {}).get(k, {}).get(str(v), v)) for k, v in params.items()}
        edits = []
        if "insert_line_before" in rule.fix:
            line = rule.fix["insert_line_before"].format(**rendered).rstrip()
            line_start = ctx.source.rfind(b"\n", 0, site.node.start_byte) + 1
            indent = indent_of(ctx.source, site.node)
            if unbraced_body(site.node):  # `for (...) for (...)`: a line before the body needs a block around both
                edits += [Edit.insert(line_start, f"{indent}{{\n{indent}{line}\n"),
                          Edit.insert(site.node.end_byte, f"\n{indent}}}")]
            else:
                edits.append(Edit.insert(line_start, f"{indent}{line}\n"))
        if "replace" in rule.fix:
            edits.append(Edit.replace(site.node, rule.fix["replace"].format(**rendered)))
        summary = f"{rule.title} at line {site.line}" + (
            f" ({', '.join(f'{k}={v}' for k, v in params.items())})" if params else "")
        return Rewritten(apply(ctx.source, edits), ctx.launch, summary)

    @staticmethod
    def _failed(ctx: Context, rule: Rule, node: Any, params: dict[str, Any], names: list[str]) -> str | None:
        for name in names:
            if name not in CONDITIONS:
                raise RuleError(f"{rule.id}/{rule.path.name}: unknown condition {name!r}; known: {', '.join(CONDITIONS)}")
            reason = CONDITIONS[name](ctx, node, params)
            if reason:
                return reason
        return None
