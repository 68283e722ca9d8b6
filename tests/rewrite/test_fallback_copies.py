"""The copy a rewrite keeps for launches its fast path cannot serve runs row-cache's loops as
written (cuopt/source/analysis.py `fit_branches`): a copy that also held the cached row would
raise the register count of the whole kernel for a path that seldom runs."""
from __future__ import annotations

from pathlib import Path

from cuopt.rewrite.engine import Engine
from cuopt.source.analysis import ROW_FITS
from cuopt.targets import rewrite_contexts
from tests.rewrite.cases import rule_cases

WIDE = "if (C > 768) {"  # the test privatize writes where the shared copy holds the spec's 768 columns


def test_privatizes_wide_row_copy_reads_the_row_from_memory(tmp_path: Path) -> None:
    [case] = [c for c in rule_cases() if c.id == "privatize:layernorm_bwd_slots"]
    ctx = rewrite_contexts(case.prepare(tmp_path))[0]
    assert ctx.source.decode().count(ROW_FITS) == 2  # row-cache's two loops, each opened with the comment
    [offer] = [o for o in Engine.default().offers(ctx, only={"privatize"}) if o.action.param_dict["per_thread"] == 8]
    text = offer.result.source.decode()
    start = text.index(WIDE)
    end = text.index("        return;\n    }\n", start)
    wide, fast = text[start:end], text[:start] + text[end:]
    assert ROW_FITS not in wide and "_row[cuopt_k]" not in wide
    assert "for (int c = cuopt_lane; c < C; c += 32)" in wide and "atomicAdd(&dweight[c]" in wide
    assert fast.count(ROW_FITS) == 2 and "_row[cuopt_k]" in fast  # the fast path keeps the cached row
