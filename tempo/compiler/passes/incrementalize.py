"""Incrementalisation for memory (ARCHITECTURE §5.5): a tensor larger than
`incrementalize_mem_threshold` bytes is computed in blocks of rows of one spatial dim,
over a new dimension, so that only one block of it (and of the ops around it) is alive at
a time; sums over that dim add up per-block sums. E.g. the loss of a learner over a large
batch, `(relu(x @ w) * v).sum()`, never holds the whole `relu(x @ w)`.

The region of ops that run per block is planned in `incrementalize_plan`; here the graph
is rewritten. Each region op gains the block dimension `k` (its rows: `k*U : (k+1)*U`), so
the garbage collector frees a block once the block's readers ran; inputs outside the
region are sliced per block; a sum over the rows becomes a per-block sum and a sum over
the blocks (the same value up to float reassociation); an outside reader that needs a
region tensor whole reads its blocks put back together.

The number of blocks K divides the rows (blocks are static, equal shapes): the least K
that leaves each block at most `incrementalization_percentile` % of the rows and at most
the threshold in bytes, if the rows allow it (else one row per block)."""

from __future__ import annotations

from dataclasses import replace

from tempo.compiler.passes.incrementalize_plan import Region, grow, shape_with, with_rows
from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.domain import Domain
from tempo.core.index_expr import ConstInt, IndexAtom, IndexSequence, Slice, Symbol
from tempo.core.sdg import SDG, Edge, TensorId, TensorInfo
from tempo.core.shape import Shape

DIM_HINT = "inc"  # names of the block dimensions: inc<n>


def run(sdg: SDG, cfg: ExecutionConfig) -> SDG:
    threshold = cfg.incrementalize_mem_threshold
    big = sorted(((_bytes(sdg, tid), tid.op_id, tid) for tid, info in sdg.tensors.items()
                  if info.shape.is_static()), reverse=True)
    made: dict[int, Symbol] = {}   # block count -> its dimension
    for nbytes, _, tid in big:
        if nbytes <= threshold:
            break
        if tid not in sdg.tensors:
            continue
        frozen = frozenset(v.name for v in made.values())
        regions = [grow(sdg, tid, d, frozen) for d in range(len(sdg.tensors[tid].shape))]
        scored = [(saved(sdg, r, threshold), -d) for d, r in enumerate(regions)
                  if r is not None]
        if not scored or max(scored)[0] <= 0:
            continue
        reg = regions[-max(scored)[1]]
        assert reg is not None
        k = blocks(reg.rows, nbytes, cfg)
        if k not in made:
            made[k] = sdg.new_dim(DIM_HINT, k)[0]
        rewrite(sdg, reg, made[k], k)
    return sdg


def saved(sdg: SDG, reg: Region, threshold: int) -> int:
    """Bytes of the tensors above the threshold the region no longer holds whole, less
    what putting tensors back together costs (a stacked copy and the joined tensor per
    concat exit). A region op read after an exit's result (e.g. activations the backward
    pass reads once a loss over all blocks is known) has every block alive at once: it
    saves nothing."""
    late = _after_exits(sdg, reg)
    whole = {i for i in reg.dims if i not in late
             and any(e.sink in late for e in sdg.out_edges.get(i, []))} | set(reg.concat)
    held = sum(n for n in (_bytes(sdg, TensorId(i, 0)) for i in reg.dims if i not in whole)
               if n > threshold)
    return held - 2 * sum(_bytes(sdg, TensorId(i, 0)) for i in reg.concat)


def _after_exits(sdg: SDG, reg: Region) -> set[int]:
    """Region ops that depend on an exit's result (through any ops of the same point:
    recurrences, which read other points, are not followed)."""
    seen: set[int] = set()
    todo = list(reg.exits)
    while todo:
        i = todo.pop()
        for e in sdg.out_edges.get(i, []):
            if e.sink not in seen and not isinstance(sdg.ops[e.sink], ops.MergeOp):
                seen.add(e.sink)
                todo.append(e.sink)
    return seen & set(reg.dims)


def _bytes(sdg: SDG, tid: TensorId) -> int:
    info = sdg.tensors[tid]
    return int(info.shape.as_static().prod()) * info.dtype.repr_bytes


def blocks(rows: int, nbytes: int, cfg: ExecutionConfig) -> int:
    """The number of blocks: the least divisor of `rows` giving blocks of at most
    `incrementalization_percentile` % of the rows and at most the threshold in bytes."""
    pct = cfg.incrementalization_percentile
    least = rows if pct == 0 else -(-100 // pct)
    for k in range(max(2, least), rows):
        if rows % k == 0 and nbytes // k <= cfg.incrementalize_mem_threshold:
            return k
    return rows


def rewrite(sdg: SDG, reg: Region, var: Symbol, k: int) -> None:
    """Run the region's ops once per block of `rows // k` rows along `var` (see module)."""
    u = reg.rows // k
    internal = [e for i in reg.dims for e in sdg.in_edges[i] if e.src.op_id in reg.dims]
    for i, d in reg.dims.items():
        op = sdg.ops[i]
        sdg.replace_op(replace(with_rows(op, d, u), domain=op.domain.append_dim(var)))
        tid = TensorId(i, 0)
        info = sdg.tensors[tid]
        sdg.tensors[tid] = TensorInfo(shape_with(info.shape, d, u), info.dtype)
    for e in internal:
        sdg.set_input(e, e.src, with_member(e.expr, sdg.ops[e.src.op_id].domain, var, var))
    sliced: dict[tuple[TensorId, str, int, tuple[str, ...]], tuple[TensorId, IndexSequence]] = {}

    def rows_of(e: Edge, dom: Domain) -> tuple[TensorId, IndexSequence]:
        """Block `var` of the rows along dim `reg.leaves[e]` of what `e` reads (one slice
        op for every reader of the same rows), and how `dom` reads it."""
        j = reg.leaves[e]
        key = (e.src, str(e.expr), j, tuple(v.name for v in dom.variables))
        if key not in sliced:
            sliced[key] = _slice_before_stack(sdg, e, j, var, u) or (
                _new(sdg, ops.SliceOp, dom, [(e.src, e.expr)], dim=j, start=var * u,
                     length=u), dom.basis_expr)
        return sliced[key]

    for e in [e for e in reg.leaves if e.sink in reg.dims]:
        dom = sdg.ops[e.sink].domain
        sdg.set_input(e, *rows_of(e, dom))
    whole = _all_blocks(k)
    for x in sorted(reg.exits):  # a partial result per block, summed over the blocks
        op = sdg.ops[x]
        dom = op.domain.append_dim(var)
        part = replace(op, op_id=sdg.new_id(), domain=dom)
        sdg.add_inferred(part, [(e.src, dom.basis_expr) if e.src.op_id in reg.dims
                                else rows_of(e, dom) for e in sdg.in_edges[x]])
        sdg.redefine(ops.SumOp(op_id=x, domain=op.domain, dims=(0,), site=op.site),
                     [(TensorId(part.op_id, 0), with_member(op.domain.basis_expr, dom, var,
                                                            whole))])
    for i, readers in reg.concat.items():
        joined = _joined(sdg, TensorId(i, 0), reg.dims[i], var, whole)
        for e in readers:
            sdg.set_input(e, joined, e.expr)


def _slice_before_stack(sdg: SDG, e: Edge, j: int, var: Symbol, u: int
                        ) -> tuple[TensorId, IndexSequence] | None:
    """A leaf read stacking points of its source (`x[i, 0:T]`) and sliced along a dim of
    the points themselves: each point is sliced where it is made and the block reads the
    stack of slices (`x'[i, 0:T, k]`), so the whole stack never exists (E6: 128 steps of
    observations read once per block of features). None where the read stacks nothing or
    slices a stacked dim."""
    lead = e.expr.num_slices()
    src = sdg.ops[e.src.op_id]
    if not lead or j < lead or e.cond is not None or var in src.domain:
        return None
    dom = src.domain.append_dim(var)
    tid = _new(sdg, ops.SliceOp, dom, [(e.src, src.domain.basis_expr)], dim=j - lead,
               start=var * u, length=u)
    return tid, with_member(e.expr, dom, var, var)


def _all_blocks(k: int) -> Slice:
    return Slice(ConstInt(0), ConstInt(k))


def with_member(expr: IndexSequence, dom: Domain, var: Symbol,
                atom: IndexAtom) -> IndexSequence:
    """A read of a tensor over `dom` (which has `var`) by `expr` (one member per other
    variable of `dom`, in order) and `atom` for `var`. Domains keep universe order, so a
    block dimension made earlier (a lower index) comes before `var`: `var` is not
    necessarily last (a leaf summed over the blocks of another region: [0:K3] read per
    block of inc2 is [inc2, 0:K3] over (inc2, inc3), not [0:K3, inc2])."""
    pos = dom.find_variable_index(var)
    members = list(expr.members)
    return IndexSequence((*members[:pos], atom, *members[pos:]))


def _joined(sdg: SDG, tid: TensorId, d: int, var: Symbol, whole: Slice) -> TensorId:
    """The blocks of region tensor `tid` put back together along its dim `d`, over the
    region's domain without the block dimension `var`."""
    op = sdg.ops[tid.op_id]
    dom = op.domain.remove_dim(var)
    n = len(sdg.tensors[tid].shape)
    stacked = _new(sdg, ops.IdentOp, dom,
                   [(tid, with_member(dom.basis_expr, op.domain, var, whole))], site=op.site)
    perm = (*range(1, d + 1), 0, *range(d + 1, n + 1))
    moved = _new(sdg, ops.PermuteOp, dom, [(stacked, dom.basis_expr)], dims=perm, site=op.site)
    shape = sdg.tensors[moved].shape.as_static()
    rows = shape[d] * shape[d + 1]
    full = (*shape[:d], rows, *shape[d + 2:])
    return _new(sdg, ops.ReshapeOp, dom, [(moved, dom.basis_expr)], shape=Shape.from_(full),
                site=op.site)


def _new(sdg: SDG, op_cls: type[ops.Op], domain: Domain,
         reads: list[tuple[TensorId, IndexSequence]], **params: object) -> TensorId:
    # ignore: `params` are the fields of `op_cls`, which mypy cannot match to kwargs
    op = op_cls(op_id=sdg.new_id(), domain=domain, **params)  # type: ignore[arg-type]
    sdg.add_inferred(op, reads)
    return TensorId(op.op_id, 0)
