"""Which ops the vectorisation pass batches over a dimension `d` (ARCHITECTURE §5.3).

An op can run once over all `D` points of `d` when:
- it has a batching rule for its inputs (`vectorize_rules`), its kernel does not receive
  `d` (symbolic shapes or slice starts in `d` vary per point) and `d` has its full bound;
- every read it makes of a tensor over `d` reads the same point `d` (the identity member;
  a slice `0:D` of a tensor that keeps its loop is what it becomes), and no other index
  or condition of its reads mentions `d`; a recurrence whose branch conditions select
  along `d` is batched by pieces (`vectorize_pieces`) when non-trivial vectorisation is on;
- no dependence cycle carries `d`: the ops over `d` form strongly connected components
  (reads between ops that both iterate over `d`); a component with a read at another point
  of `d` (`x[t-1]` in `s[t] = f(s[t-1])`) is a recurrence along `d` and keeps its loop.
  A component is batched whole or not at all: half a cycle batched and half looping would
  need all `D` points of each half before the other at the same point of the cycle.

A batched op runs at all `D` points, where the loop runs an op that only feeds
recurrence branches only where a branch takes it (`vectorize_points`): an index there
(`tok[t < P] = prompt.index(0, t)`) is masked to 0 at the other points, a user function
(`Batching.exact_points`) keeps its loop, and an op that keeps its loop on part of `d` is
not gathered over all of it.

An op that keeps a small part of each point of a producer that keeps its loop (the reward
column of an env step's packed output) stays in the loop when the producer's points, or
all `D` of them, are large (`TUNING.gather_point_bytes`, `TUNING.gather_bytes`): batched, it would
gather all `D` whole points — keeping them alive until the gather and copying them — to
use a part of each.

Groups are the connected sets of such ops; a group of fewer than
`reject_vec_groups_smaller_than` ops, or whose share of reads from tensors that keep
their loop over `d` (each becomes a gather of all `D` points) exceeds
`reject_vec_groups_with_external_deps_ratio_greater_than`, keeps its loops.

Memory: batched, a group holds all `D` points of what its loop holds one point (or one
window) of at a time: the points of each looping producer it gathers, each batched result
that a reader keeping its loop takes apart point by point (a window mean over a long `t`:
the loop holds `W` rows, the batched divide all `T` sums), and each member's batched
inputs and outputs while it runs. That footprint is O(D) where the loop's is O(1) in `D`,
so under `device_memory_cap_bytes` a group whose O(D) bytes (`_held_bytes`) exceed
`TUNING.vec_cap_share` of the cap keeps its loops (acceptance r30: the batched form raised
TempoMemoryError where the loop fit), net of what the memory passes relieve (`_over_cap`:
swap moves stored points to the host, incrementalisation computes large values in
blocks). Results read whole (`x[0:D]`, a reduction) are held
over all of `D` by the loop too and count only while made. Without a cap, vectorisation
trades that memory for fewer calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tempo.compiler.passes.accumulate import keeps_loop
from tempo.compiler.passes.vectorize_pieces import Pieces, plan_pieces
from tempo.compiler.passes.vectorize_points import LoopPoints
from tempo.compiler.passes.vectorize_rules import Batching, batch_op
from tempo.core import ops
from tempo.core.configs import TUNING, ExecutionConfig
from tempo.core.dtype import DataType
from tempo.core.index_expr import IndexExpr, Slice, Symbol
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.core.shape import Shape
from tempo.schedule.loop_tree import strongly_connected

# A looping producer is not gathered (its points stacked over `d`) for an op that keeps at
# most half of each point when a point is large or the gather is: TUNING.gather_point_bytes
# and TUNING.gather_bytes (their docstrings say why).


@dataclass
class Plan:
    """Ops to batch over `dim` (of size `size`), with each op's batched form."""

    dim: Symbol
    size: int
    batchings: dict[int, Batching] = field(default_factory=dict)
    pieces: dict[int, Pieces] = field(default_factory=dict)
    reads: dict[int, list[Read]] = field(default_factory=dict)
    masks: dict[int, np.ndarray] = field(default_factory=dict)
    """Batched ops the loop runs at some points of `d` only (`vectorize_points`): the
    points it runs them at; their `addresses` inputs are masked to 0 elsewhere."""

    @property
    def members(self) -> set[int]:
        return set(self.batchings)


def is_dim(member: object, d: Symbol) -> bool:
    return isinstance(member, Symbol) and member.name == d.name


def mentions(x: IndexExpr | None, d: Symbol) -> bool:
    return x is not None and any(v.name == d.name for v in x.vars_used())


@dataclass(frozen=True)
class Read:
    """How a batched op reads one input along `d`: `free` (the source has no `d`: read as
    before, broadcast), `same` (point `d`: batched), `shift` (point `d + c`: a shifted
    slice of the batched source, edge-padded where the loop never reads), `table` (point
    `where[d]`, a constant in `0:D` at every point: a clamped shift `x[min(t+1, T-1)]` or
    `x[max(t-k, 0)]`, read by gathering those points), `at` (the one point `c` for every
    `d`: unbatched)."""

    kind: str
    c: int = 0
    where: tuple[int, ...] = ()

    @property
    def batched(self) -> bool:
        return self.kind in ("same", "shift", "table")


FREE, SAME = Read("free"), Read("same")


def read_kind(sdg: SDG, e: Edge, d: Symbol, size: int, shifts: bool) -> Read | None:
    """The form of read `e` along `d` (None: none the pass can batch); `shifts` allows
    `shift` and `at` reads (non-trivial vectorisation)."""
    src = sdg.ops[e.src.op_id]
    if mentions(e.cond, d):
        return None
    pos = src.domain.find_variable_index(d) if d in src.domain else -1
    for k, m in enumerate(e.expr):
        if k != pos and mentions(m, d):
            return None
    if pos < 0:
        return FREE
    m = e.expr[pos]
    if is_dim(m, d):
        return SAME
    if not shifts or e.cond is not None or e.expr.num_slices() or isinstance(m, Slice):
        return None
    if {v.name for v in m.vars_used()} - {d.name}:
        return None
    try:
        at0, at1 = m.evaluate({**sdg.bound_defs, d: 0}), m.evaluate({**sdg.bound_defs, d: 1})
        if not mentions(m, d):
            return Read("at", at0) if 0 <= at0 < size else None
        c = at0
        if at1 - at0 == 1 and (m - d).simplify().is_constant() and 0 < abs(c) < size:
            return Read("shift", c)
    except Exception:  # noqa: BLE001 - an index that does not evaluate: not batched
        return None
    where = point_table(sdg, m, d, size)
    return None if where is None else Read("table", where=where)


def point_table(sdg: SDG, m: IndexExpr, d: Symbol, size: int) -> tuple[int, ...] | None:
    """The point `m` reads along `d` at each of its `size` points, when every one is a
    compile-time int inside `0:size` (a clamped shift `min(d+1, D-1)`), else None."""
    out: dict[int, int] = {}
    for p in sorted(range(size), key=lambda p: 0 < p < size - 1):  # the ends first: a
        try:  # plain shift leaves `0:size` at one of them
            v = m.evaluate({**sdg.bound_defs, d: p})
        except Exception:  # noqa: BLE001 - another loop variable or unbound: not constant
            return None
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < size:
            return None
        out[p] = v
    return tuple(out[p] for p in range(size))


def _candidate(sdg: SDG, op: ops.Op, d: Symbol, size: int, cfg: ExecutionConfig
               ) -> tuple[Batching, Pieces | None, list[Read]] | None:
    if not op.domain.has_default_bound(d) or op.num_outputs == 0 or keeps_loop(op, d):
        return None  # (a running sum along d placed it in its loop: `accumulate`)
    if not isinstance(op, ops.EvalSymbolOp) and any(
            not isinstance(x, int) and mentions(x, d) for x in op.runtime_exprs()):
        return None  # its kernel is told the point (a symbolic shape or slice start)
    if op.num_outputs > 1 and sdg.is_kept(op.op_id):
        return None  # the user reads it by its domain; one-output ops keep theirs (unbatch)
    edges = sdg.in_edges[op.op_id]
    merge = isinstance(op, ops.MergeOp)
    if any((e.cond is not None and not merge) or (merge and e.expr.num_slices())
           for e in edges):
        return None  # the rewrite routes such reads through ops, which have no condition
    pieces = None
    shifts = cfg.enable_non_trivial_vectorization and not merge
    reads = [read_kind(sdg, e, d, size, shifts) for e in edges]
    if any(r is None for r in reads):
        if not (isinstance(op, ops.MergeOp) and cfg.enable_non_trivial_vectorization):
            return None
        pieces = plan_pieces(sdg, op, d, size)
        if pieces is None:
            return None
    shapes = [sdg.read_shape(e) for e in edges]
    dts = [sdg.tensors[e.src].dtype for e in edges]
    outs = [sdg.tensors[TensorId(op.op_id, k)].shape for k in range(op.num_outputs)]
    if any(d.name in {v.name for v in s.vars_used()} for s in (*shapes, *outs)):
        return None  # a shape that varies along d (a growing window): ragged, not a batch
    if pieces is not None:  # the pieces are concatenated: every one is batched to D
        b = batch_op(op, [True] * len(edges), shapes, dts, size, d.name, outs)
        reads = [SAME] * len(edges)
    else:
        b = batch_op(op, [r is not None and r.batched for r in reads], shapes, dts, size,
                     d.name, outs)
    return None if b is None else (b, pieces, [r for r in reads if r is not None])


def plan(sdg: SDG, d: Symbol, size: int, cfg: ExecutionConfig) -> Plan:
    """The ops to batch over `d` in `sdg` (possibly none)."""
    over = [i for i, op in sdg.ops.items() if d in op.domain]
    over_set = set(over)
    succ: dict[int, list[int]] = {i: [] for i in over}
    carried: set[int] = set()  # ops reading another point of d from an op over d
    for i in over:
        for e in sdg.in_edges[i]:
            s = e.src.op_id
            if s in over_set:
                succ[s].append(i)
                pos = sdg.ops[s].domain.find_variable_index(d)
                if not is_dim(e.expr[pos], d):
                    carried.add(i)
    found: dict[int, tuple[Batching, Pieces | None, list[Read]]] = {}
    scc_of: dict[int, list[int]] = {}
    for scc in strongly_connected(over, succ):
        cyclic = len(scc) > 1 or scc[0] in succ[scc[0]]
        if cyclic and any(i in carried for i in scc):
            continue  # a recurrence along d: it keeps its loop
        got = {i: _candidate(sdg, sdg.ops[i], d, size, cfg) for i in scc}
        if cyclic and any(c is None for c in got.values()):
            continue  # batched whole or not at all
        found.update({i: c for i, c in got.items() if c is not None})
        scc_of.update({i: scc for i in scc} if cyclic else {})
    points = LoopPoints(sdg, d, size)
    masks = _keep_loop_points(sdg, points, found, scc_of)
    _drop_shrinking_gathers(sdg, d, size, found, scc_of)
    _drop_partial_gathers(sdg, d, size, over, found, scc_of, points)
    out = _groups(sdg, d, size, found, cfg)
    out.masks = {i: m for i, m in masks.items() if i in out.batchings}
    return out


def _keep_loop_points(sdg: SDG, points: LoopPoints,
                      found: dict[int, tuple[Batching, Pieces | None, list[Read]]],
                      scc_of: dict[int, list[int]]) -> dict[int, np.ndarray]:
    """Candidates that can fail at points where the loop does not run them (an index,
    a user function: `Batching.addresses`, `exact_points`) and that the loop runs at
    some points of `d` only: an index is masked at the others (returned: the points
    it runs at); a user function, or an op whose points are not known, keeps its loop."""
    masks: dict[int, np.ndarray] = {}
    for i in list(found):
        if i not in found:
            continue
        b = found[i][0]
        if not (b.addresses or b.exact_points):
            continue
        at = points.points(i)
        if at is not None and at.all():
            continue
        if at is None or b.exact_points or not at.any():
            for j in scc_of.get(i, [i]):
                found.pop(j, None)
        else:
            masks[i] = at
    return masks


def _nbytes(shape: Shape, dtype: DataType) -> int | None:
    if not shape.is_static():
        return None
    return int(shape.as_static().prod()) * dtype.repr_bytes


def _drop_shrinking_gathers(sdg: SDG, d: Symbol, size: int,
                            found: dict[int, tuple[Batching, Pieces | None, list[Read]]],
                            scc_of: dict[int, list[int]]) -> None:
    """Candidates that would gather large points of a looping producer to keep at most
    half of each (see TUNING.gather_point_bytes) keep their loop (`size`: D)."""
    for i in list(found):
        if i not in found or found[i][1] is not None:
            continue
        infos = [sdg.tensors[TensorId(i, k)] for k in range(sdg.ops[i].num_outputs)]
        out = sum(_nbytes(x.shape, x.dtype) or 1 << 62 for x in infos)
        for e, r in zip(sdg.in_edges[i], found[i][2]):
            s = e.src.op_id
            if not r.batched or s in found or d not in sdg.ops[s].domain:
                continue  # not a gather
            n = _nbytes(sdg.read_shape(e), sdg.tensors[e.src].dtype)
            if n is not None and 2 * out <= n and (
                    n >= TUNING.gather_point_bytes or n * size >= TUNING.gather_bytes):
                for j in scc_of.get(i, [i]):
                    found.pop(j, None)
                break


def _partial(sdg: SDG, d: Symbol, size: int, over: list[int]) -> set[int]:
    """Ops that may run on part of `d` only: they read (outside a recurrence's guarded
    branches) another point of `d` than their own that leaves `0:D` at some point
    (`x[t-1]` exists from t = 1; a clamped `x[max(t-1, 0)]` exists everywhere), or a
    window of `d` that leaves `0:D` at some point (`g[d:d+3]` exists up to d = D - 3,
    the gradient of a window read `x[max(0,t-2):t+1]`), or read such an op at their own
    point; the scheduler runs them where their reads exist."""
    out: set[int] = set()
    for i in sdg.topological():
        if i.op_id not in over or isinstance(i, ops.MergeOp):
            continue
        for e in sdg.in_edges[i.op_id]:
            src = sdg.ops[e.src.op_id]
            if d not in src.domain:
                continue
            m = e.expr[src.domain.find_variable_index(d)]
            if e.src.op_id in out or not (is_dim(m, d) or not mentions(m, d) or (
                    isinstance(m, Slice) and _window_in_range(sdg, m, d, size)) or (
                    not isinstance(m, Slice) and point_table(sdg, m, d, size) is not None)):
                out.add(i.op_id)
                break
    return out


def _window_in_range(sdg: SDG, m: Slice, d: Symbol, size: int) -> bool:
    """Whether the window `m` over `d` lies within `0:size` at every point of `d` (an
    index that does not evaluate there counts as leaving it)."""
    for p in range(size):
        values = {**sdg.bound_defs, d: p}
        try:
            lo, hi = m.start.evaluate(values), m.stop.evaluate(values)
        except Exception:  # noqa: BLE001 - another loop variable: not known to be in range
            return False
        if not (isinstance(lo, int) and isinstance(hi, int) and 0 <= lo <= hi <= size):
            return False
    return True


def _drop_partial_gathers(sdg: SDG, d: Symbol, size: int, over: list[int],
                          found: dict[int, tuple[Batching, Pieces | None, list[Read]]],
                          scc_of: dict[int, list[int]], points: LoopPoints) -> None:
    """A batched op gathers the points of a looping producer over all of `d` (or a shifted
    range): that producer must exist there, so a producer that may run on part of `d`
    only (its reads leave `d`, or it feeds only recurrence branches taken at some points:
    `vectorize_points`) must be batched too (its batched twin computes every point), or
    its readers keep their loop."""
    partial = _partial(sdg, d, size, over)

    def part(s: int, r: Read) -> bool:
        if s in partial:
            return True
        if not points.restricted(s):
            return False
        at = points.points(s)  # the gathered span must be computed by the loop
        lo, hi = ((max(0, r.c), size + min(0, r.c)) if r.kind == "shift" else
                  (min(r.where), max(r.where) + 1) if r.kind == "table" else (0, size))
        return at is None or not bool(at[lo:hi].all())

    changed = True
    while changed:
        changed = False
        for i in list(found):
            if i not in found:
                continue
            _, pieces, reads = found[i]
            if pieces is not None:
                continue  # pieces read exactly the points the loop reads
            for e, r in zip(sdg.in_edges[i], reads):
                if r.batched and e.src.op_id not in found and d in sdg.ops[e.src.op_id].domain \
                        and part(e.src.op_id, r):
                    for j in scc_of.get(i, [i]):
                        found.pop(j, None)
                    changed = True
                    break


def _groups(sdg: SDG, d: Symbol, size: int,
            found: dict[int, tuple[Batching, Pieces | None, list[Read]]],
            cfg: ExecutionConfig) -> Plan:
    """Connected groups of candidates, minus those too small or too dependent on ops
    that keep their loop over `d`."""
    parent = {i: i for i in found}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in found:
        for e in sdg.in_edges[i]:
            if e.src.op_id in found:
                parent[root(e.src.op_id)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in found:
        groups.setdefault(root(i), []).append(i)
    out = Plan(d, size)
    for members in groups.values():
        reads = gathers = 0
        for i in members:
            for e in sdg.in_edges[i]:
                reads += 1
                s = e.src.op_id
                gathers += s not in found and d in sdg.ops[s].domain
        if len(members) < cfg.reject_vec_groups_smaller_than and (
                gathers or not _only_stacked(sdg, d, size, members)):
            continue
        if reads and gathers / reads > cfg.reject_vec_groups_with_external_deps_ratio_greater_than:
            continue
        if cfg.device_memory_cap_bytes is not None and _over_cap(
                cfg, *_held_bytes(sdg, d, size, members, found)):
            continue
        for i in members:
            b, p, r = found[i]
            out.batchings[i] = b
            out.reads[i] = r
            if p is not None:
                out.pieces[i] = p
    return out


def _over_cap(cfg: ExecutionConfig, points: int, step: int) -> bool:
    """Whether a batched group holding `points` bytes of stored points and `step` bytes of
    one member's batched values would pass `TUNING.vec_cap_share` of the device cap, after
    what the memory passes relieve: with swap on, stored points move to the host pool;
    with incrementalisation below the cap, a member's values are computed in blocks of at
    most `incrementalize_mem_threshold` bytes. (Counting them whole refused E6's learner
    over t and its envs over b: each env's 192 KiB observations then stayed below the
    swap's point size and filled the 256 MiB cap, where the batched plan swaps.)"""
    limit = TUNING.vec_cap_share * (cfg.device_memory_cap_bytes or 0)
    held = 0 if cfg.enable_swap else points
    if cfg.enable_incrementalization and cfg.incrementalize_mem_threshold <= limit:
        step = min(step, cfg.incrementalize_mem_threshold)
    return held + step > limit


def _held_bytes(sdg: SDG, d: Symbol, size: int, members: list[int],
                found: dict[int, tuple[Batching, Pieces | None, list[Read]]]
                ) -> tuple[int, int]:
    """The bytes the batched group holds at once over all `size` points of `d`, where its
    loop holds one point (or one window), as (stored points, one member's values): the
    points of each looping producer it gathers (its store keeps all `D` of them until the
    gather; once per tensor, however many members read it) and its results that readers
    outside take apart point by point (kept until their loop ends); and the largest
    member's batched inputs and outputs (alive while it runs). A shape that stays symbolic
    once the bounds are known counts 0.

    A looping producer or reader over dims after `d` (`x` over `(b, t)` gathered along
    `b`) runs them inside its loop over `d`: the gather at the first `t` waits for all of
    `t` at `b = 0`, so such a tensor counts all points of those dims too."""
    inside = set(members)
    held: dict[TensorId, int] = {}
    step = 0
    for i in members:
        here = 0
        for e, r in zip(sdg.in_edges[i], found[i][2]):
            if not r.batched:
                continue
            s = e.src.op_id
            if s not in found and d in sdg.ops[s].domain:
                held[e.src] = max(held.get(e.src, 0), _inner_points(sdg, s, d))
            here += _bound_nbytes(sdg, sdg.read_shape(e), sdg.tensors[e.src].dtype)
        pos = sdg.ops[i].domain.find_variable_index(d)
        for k in range(sdg.ops[i].num_outputs):
            x = sdg.tensors[TensorId(i, k)]
            here += _bound_nbytes(sdg, x.shape, x.dtype)
        step = max(step, here)
        for e in sdg.out_edges.get(i, []):
            if e.sink not in inside and not _whole(sdg, e.expr[pos], size):
                held[e.src] = max(held.get(e.src, 0), _inner_points(sdg, e.sink, d))
    point = sum(n * _bound_nbytes(sdg, sdg.tensors[x].shape, sdg.tensors[x].dtype)
                for x, n in held.items())
    return size * point, size * step


def _inner_points(sdg: SDG, op_id: int, d: Symbol) -> int:
    """The points of the dims after `d` in op `op_id`'s domain (its loops inside the loop
    over `d`; a dim of unknown extent counts 1)."""
    dom = sdg.ops[op_id].domain
    n = 1
    for v in dom.variables[dom.find_variable_index(d) + 1:] if d in dom else ():
        k = sdg.bound_defs.get(v.as_bound())
        n *= k if isinstance(k, int) and not isinstance(k, bool) and k > 0 else 1
    return n


def _bound_nbytes(sdg: SDG, shape: Shape, dtype: DataType) -> int:
    """Bytes of one point of `shape` with the program's bounds substituted (0 if some
    dim stays symbolic: not estimated)."""
    return _nbytes(shape.try_resolve(sdg.bound_defs), dtype) or 0


def _only_stacked(sdg: SDG, d: Symbol, size: int, members: list[int]) -> bool:
    """Whether every reader outside the group reads all `size` points of `d` at once
    (`x[0:D]`, e.g. a reduction): then batching gathers nothing and unbatches nothing, and
    even a group smaller than the threshold saves D - 1 calls (a constant folded over `d`)."""
    inside = set(members)
    for i in members:
        pos = sdg.ops[i].domain.find_variable_index(d)
        for e in sdg.out_edges.get(i, []):
            if e.sink in inside:
                continue
            if not _whole(sdg, e.expr[pos], size):
                return False
    return not any(sdg.is_kept(i) for i in members)


def _whole(sdg: SDG, m: IndexExpr, size: int) -> bool:
    """Whether `m` reads all `size` points of its dim at once (`x[0:D]`)."""
    return isinstance(m, Slice) and m.start.try_eval(sdg.bound_defs) == 0 \
        and m.stop.try_eval(sdg.bound_defs) == size
