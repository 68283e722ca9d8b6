"""block-size: a new block shape; the grid follows (it is written per block), `__launch_bounds__`
is updated or added, and shared arrays sized like the block are resized with it."""
from __future__ import annotations

from typing import Any

from cuopt.rewrite.context import Context, Refuse, Rewritten, Site
from cuopt.source.edits import Edit, apply
from cuopt.rewrite.transforms.common import scales_with_block
from cuopt.source.affine import BLOCK, DIM, THREAD
from cuopt.source.parse import text, walk
from cuopt.spec.model import Launch


def parse_block(value: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in str(value).split("x"))


class BlockSize:
    def sites(self, ctx: Context, rule: Any) -> list[Site]:
        for axis in range(ctx.element_dims):  # a batch axis of the grid stays as it is
            scales_with_block(ctx, axis)
            self._refuse_per_block_elements(ctx, axis)
        return [Site(ctx.kernel.node, data=self._resizable_arrays(ctx))]

    def apply(self, ctx: Context, rule: Any, site: Site, params: dict[str, Any]) -> Rewritten:
        new = parse_block(params["block"])
        old = ctx.launch.block3[:ctx.element_dims]
        if len(new) != ctx.element_dims:
            raise Refuse(f"a {len(new)}D block for a {ctx.element_dims}D launch")
        if new == tuple(old) and ctx.given is None:  # under its lean launch, the same block drops the copies
            raise Refuse("the launch already uses this block")
        threads = 1
        for v in new:
            threads *= v
        if threads > 1024:
            raise Refuse(f"{threads} threads per block")
        edits = [Edit.replace(node, str(value)) for node, value in self._array_edits(site.data, new)]
        edits.append(self._launch_bounds(ctx, threads))
        self._check_literals(ctx, old, {n.start_byte for n, _ in self._array_edits(site.data, new)})
        block = tuple(new) + tuple(ctx.launch.block[len(new):])
        launch = Launch(block, ctx.launch.grid, ctx.launch.shared)
        given = (ctx.given or ctx.launch).block
        return Rewritten(apply(ctx.source, edits), launch,
                         f"block {'x'.join(map(str, given))} -> {'x'.join(map(str, new))}")

    @staticmethod
    def _refuse_per_block_elements(ctx: Context, axis: int) -> None:
        """Refuse when a global array is indexed by blockIdx without blockDim (`best[blockIdx.x]`):
        one element per block, so a new shape would change which positions each element covers."""
        for a in ctx.model.accesses:
            if a.space == "global" and any(p is not None and any(BLOCK[axis] in m and DIM[axis] not in m
                                                                 for m, _ in p.terms) for p in a.index):
                raise Refuse(f"{a.array} is indexed by {BLOCK[axis]} without {DIM[axis]} (line {a.line}): "
                             "one element per block, which another block shape would change")

    @staticmethod
    def _resizable_arrays(ctx: Context) -> list[tuple[Any, list[Any]]]:
        """Shared arrays indexed by threadIdx: each must be sized exactly like the block
        ([threads] or [block.y][block.x]); their size literals are rewritten with the block."""
        out = []
        old = ctx.launch.block3[:ctx.element_dims]
        threads = 1
        for v in old:
            threads *= v
        for arr in ctx.model.shared.values():
            uses = [a for a in ctx.model.accesses if a.array == arr.name]
            if not any(p is not None and p.symbols() & set(THREAD) or p is None for a in uses for p in a.index):
                continue
            if arr.extern:
                raise Refuse(f"dynamic shared array {arr.name} is indexed by threadIdx; its size is set by the host")
            sizes = [d for d in arr.dims]
            literals = [n for n in walk(arr.node) if n.type == "number_literal"
                        and n.parent is not None and n.parent.type == "array_declarator"]
            if len(sizes) == 1 and sizes[0] == threads and len(literals) == 1:
                out.append((arr.name, [("threads", literals[0])]))
            elif len(sizes) == 2 and ctx.element_dims == 2 and tuple(sizes) == (old[1], old[0]) and len(literals) == 2:
                out.append((arr.name, [("y", literals[0]), ("x", literals[1])]))
            else:
                shown = "".join(f"[{d if d is not None else '?'}]" for d in sizes)
                raise Refuse(f"__shared__ {arr.name}{shown} is indexed by threadIdx but not sized like the "
                             f"block ({'x'.join(map(str, old))}): the block size is hard-coded")
        return out

    @staticmethod
    def _array_edits(arrays: list[tuple[Any, list[Any]]], new: tuple[int, ...]) -> list[tuple[Any, int]]:
        threads = 1
        for v in new:
            threads *= v
        value = {"threads": threads, "x": new[0], "y": new[1] if len(new) > 1 else 1}
        return [(node, value[which]) for _, dims in arrays for which, node in dims]

    @staticmethod
    def _check_literals(ctx: Context, old: tuple[int, ...], handled: set[int]) -> None:
        threads = 1
        for v in old:
            threads *= v
        suspicious = {v for v in (*old, threads) if v >= 64}
        for n in walk(ctx.kernel.body):
            if n.type == "number_literal" and n.start_byte not in handled:
                try:
                    value = int(text(n).rstrip("uUlL"), 0)
                except ValueError:
                    continue
                if value in suspicious:
                    raise Refuse(f"the literal {value} at line {n.start_point.row + 1} may hard-code the block size")

    @staticmethod
    def _launch_bounds(ctx: Context, threads: int) -> Edit:
        node = ctx.kernel.node
        bounds = next((c for c in node.children if c.type == "launch_bounds"), None)
        if bounds is not None:
            args = [c for c in bounds.named_children]
            if not args or args[0].type != "number_literal":
                raise Refuse("__launch_bounds__ is not a literal")
            return Edit.replace(args[0], str(threads))
        decl = node.child_by_field_name("declarator")
        assert decl is not None
        return Edit.insert(decl.start_byte, f"__launch_bounds__({threads}) ")


TRANSFORM = BlockSize()
