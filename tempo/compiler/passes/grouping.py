"""Dataflow grouping (ARCHITECTURE §5.6): connected ops over one domain that read each other
point to point become one fused region (`tempo.core.ops_region.RegionOp`), which the
backend compiles as one function (`jax.jit` on jax). It runs after autodiff and
vectorisation, so gradients and batching rules never see a region.

Which ops join: pure kernels (no UDF, recurrence, barrier, random or symbol source; no
kernel argument that varies with a loop variable; no tensor the user keeps, whose id must
stay readable), along reads at the same point of the same domain, with the same demand
(ops that only feed a recurrence branch run only where it reads them) and the same
partial reads upstream (a region runs only where all its members' reads exist, so an op
computed at every point does not join one whose window read `g[t:t+3]` leaves `0:T`). Two groups are
joined only when no path leads from one through other ops back to the other at the same
point (A → X → B with A, B joined and X outside would make the region wait on itself;
`grouping_cycles`). A region holds at least two ops (one op is already one kernel call)
and at most `max_dataflow_group_size`. A region's intermediates never reach a store, so
each region carries its scratch bytes (the most bytes of member values alive at once in a
call), which a tracked run charges around the call: the accountant stays an upper bound.
Under a device memory cap only ops of static shapes join (their scratch is a constant).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable
from typing import Any

import islpy as isl

from tempo.compiler.passes.grouping_cycles import (
    Interval,
    Work,
    edge_distance,
    orderable,
    returns,
)
from tempo.compiler.passes.grouping_escapes import Escapes
from tempo.compiler.passes.grouping_folds import tagged_body
from tempo.core import ops
from tempo.core.configs import TUNING, ExecutionConfig
from tempo.core.index_expr import IndexSequence, Symbol
from tempo.core.op_base import Op
from tempo.core.op_bounds import bind_bounds
from tempo.core.ops_region import REGION_INPUT, Ref, RegionOp
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.core.shape import Shape
from tempo.schedule.grouping import INF, detour, is_basis, zero_distance_oracle

_log = logging.getLogger(__name__)

NOT_FUSIBLE: tuple[type[Op], ...] = (
    ops.MergeOp, ops.UDFSourceOp, ops.SinkUDFOp, ops.MapUDFOp, ops.BarrierOp, ops.RandOp,
    ops.EvalSymbolOp, ops.ConstOp, ops.FillOp, RegionOp, ops.TiledAttentionOp,
    ops.TiledReduceOp,
)
"""Ops a region never holds: effects and RNG order stay in the schedule, sources are inputs
(a constant baked into a compiled region would be recompiled with it), recurrences choose
a branch per point, and tiled ops take their ranges as store blocks (views
handed over by the store, not values a region passes between members)."""


def run(sdg: SDG, cfg: ExecutionConfig) -> SDG:
    capped = cfg.device_memory_cap_bytes is not None
    lo = max(2, cfg.min_dataflow_group_size)
    for members in find_regions(sdg, cfg.max_dataflow_group_size, static_only=capped):
        if len(members) >= lo:
            fuse(sdg, members, cfg)
    return sdg


def compiled(cfg: ExecutionConfig, elements: int, static: bool) -> bool:
    """Whether the backend compiles a region (`enable_group_fusions`): always on jax (a
    jitted call costs what one eager op does, so a region of n ops saves n - 1 dispatches),
    on torch only past `Tuning.torch_compile_min_elements`, never on numpy; only regions whose
    inputs have static shapes (a shape growing with a loop would recompile per point)."""
    if not (cfg.enable_group_fusions and static):
        return False
    if cfg.backend == "jax":
        return True
    return (cfg.backend == "torch" and cfg.torch_compilation_backend == "compile"
            and elements >= TUNING.torch_compile_min_elements)


def fusible(sdg: SDG, op: Op) -> bool:
    if isinstance(op, NOT_FUSIBLE) or op.num_outputs == 0 or sdg.is_kept(op.op_id):
        return False
    if any(e.cond is not None for e in sdg.in_edges[op.op_id]):
        return False
    ended = {s.as_bound() for s in sdg.loop_dims}  # a boolean bound changes at run time
    for e in op.runtime_exprs():
        if not isinstance(e, int) and (e.vars_used() or e.bound_symbols_used() & ended):
            return False
    return True


def after_ended(sdg: SDG) -> set[int]:
    """Ops that use a boolean bound's value (the T of `{T: (max, done)}`: the divisor of
    `x[i, 0:T].mean()`, a read `x[i, t:T]`) and the ops reading them at the same point of
    every other dim: they run after the loop that fixes T (schedule.stop_order). Fused
    with an op the stop needs (the forward `r` of an episode with the backward's `1/T`,
    when the weights of iteration i come from the gradient of i - 1), the region ran
    inside the loop and took T's cap: a silently wrong mean (accept8 e10)."""
    if not sdg.ended_bounds:
        return set()
    names = {b.name for b in sdg.ended_bounds}
    ended_vars = {b.as_var().name for b in sdg.ended_bounds}

    def mentions(e: Any) -> bool:
        return not isinstance(e, int) and any(b.name in names for b in e.bound_symbols_used())

    todo = [i for i, op in sdg.ops.items()
            if any(mentions(x) for x in op.runtime_exprs())
            or any(mentions(m) for e in sdg.in_edges[i] for m in (*e.expr, e.cond)
                   if m is not None)]
    seen = set(todo)
    while todo:
        i = todo.pop()
        src = sdg.ops[i].domain.variables
        for e in sdg.out_edges.get(i, []):
            same = all(v.name in ended_vars or (isinstance(m, Symbol) and m.name == v.name)
                       for v, m in zip(src, e.expr))
            if same and e.sink not in seen:
                seen.add(e.sink)
                todo.append(e.sink)
    return seen


def _joinable(sdg: SDG, e: Edge, ok: set[int]) -> bool:
    src, sink = e.src.op_id, e.sink
    return (src in ok and sink in ok and src != sink and is_basis(e, sdg)
            and sdg.ops[src].domain == sdg.ops[sink].domain)


def demands(sdg: SDG, order: list[int]) -> dict[int, frozenset[tuple[str, str]] | None]:
    """Where each op must run, as the scheduler will restrict it: an op that only feeds
    recurrence branches runs only where a branch reads it (`s[True] = f(s[t-1])` never
    computes f at t = 0), named by those branches' (index, condition) reads; None: at every
    point. Ops join only with equal demands, so no region runs a member where it may not."""
    out: dict[int, frozenset[tuple[str, str]] | None] = {}
    for i in reversed(order):
        op, es = sdg.ops[i], sdg.out_edges.get(i, [])
        if not es or isinstance(op, ops.MergeOp | ops.SinkUDFOp | ops.BarrierOp) \
                or sdg.is_kept(i):
            out[i] = None
            continue
        got: set[tuple[str, str]] = set()
        for e in es:
            sink, theirs = sdg.ops[e.sink], out.get(e.sink)
            if isinstance(sink, ops.MergeOp):
                got.add((str(e.expr), str(e.cond)))
            elif theirs is None:
                break
            elif is_basis(e, sdg):
                got |= theirs
            else:
                got.add((f"read by {e.sink}", str(e.expr)))  # joins nothing else
        else:
            out[i] = frozenset(got)
            continue
        out[i] = None
    return out


UNEXTENDABLE: tuple[type[Op], ...] = (
    ops.UDFSourceOp, ops.MapUDFOp, ops.SinkUDFOp, ops.BarrierOp, ops.RandOp)


def extendable(sdg: SDG, order: list[int],
               need: dict[int, frozenset[tuple[str, str]] | None]) -> dict[int, bool]:
    """Whether running an op at every point of its domain, not only where its demand asks
    (see `demands`), is safe: it and every op it reads whose demand is restricted read
    their inputs at the same point only, unconditionally, and have no effect or RNG. Such
    an op may join a region that runs everywhere (E5's env `where`, computed for the
    recurrence's next observation, with the step that also feeds the learner): the extra
    points read values that exist there, and nothing reads a value of another point that
    could wait on them (`s[True] = f(s.previous)` computed at t = 0 would)."""
    out: dict[int, bool] = {}
    for i in order:
        op = sdg.ops[i]
        if need[i] is None:
            out[i] = True
        elif isinstance(op, UNEXTENDABLE):
            out[i] = False
        else:
            out[i] = all(e.cond is None and out.get(e.src.op_id, True) and _same_point(sdg, e)
                         for e in sdg.in_edges[i])
    return out


def _same_point(sdg: SDG, e: Edge) -> bool:
    return all(isinstance(m, Symbol) and m.name == v.name
               for v, m in zip(sdg.ops[e.src.op_id].domain.variables, e.expr))


def partial_roots(sdg: SDG, order: list[int]) -> dict[int, frozenset[int]]:
    """For each op, the ops upstream of it (itself included) with a read that may leave
    its source's domain (`g[t:t+3]` past `T - 1`, `x[t-1]` at t = 0; exactly as the
    scheduler drops points, isl with the known bounds): the scheduler drops the points of
    such reads and of everything reading them, and a region loses a point when any member
    does. Ops join only with equal sets, so no member that must run at a point joins one
    that cannot (issue: the gradient of `x[max(0,t-2):t+1]`, vectorised)."""
    from tempo.schedule.isl_program import read_outside

    names = sorted({v.as_bound().name for v in sdg.universe.variables}
                   | {b.name for b in sdg.bound_defs})
    fixed = " and ".join(f"{b.name} = {v}" for b, v in sdg.bound_defs.items()
                         if isinstance(v, int) and not isinstance(v, bool)) or "true"
    decl = "[" + ", ".join(names) + "]"
    context = isl.Set(f"{decl} -> {{ : {fixed} }}")
    out: dict[int, frozenset[int]] = {}
    for i in order:
        got: set[int] = set()
        for e in sdg.in_edges[i]:
            got |= out.get(e.src.op_id, frozenset())
            if i in got or not e.expr.members or is_basis(e, sdg):
                continue
            try:
                leaves = not read_outside(sdg, e, decl, context).is_empty()
            except Exception:  # noqa: BLE001 - not affine: it may leave
                leaves = True
            if leaves:
                got.add(i)
        out[i] = frozenset(got)
    return out


def find_regions(sdg: SDG, max_size: int, static_only: bool = False) -> list[list[int]]:
    """Groups of op ids (in topological order) to fuse: unions along joinable reads of ops
    with equal demands, never closing a same-point cycle through other ops nor holding a
    read of one member by another at another point. Cycles are ruled out first by the
    scheduler's per-read test on the graph of groups (cheap: it keeps that graph), and
    where it cannot by summing distances along paths (`grouping_cycles`). With
    `static_only` only ops whose outputs have static shapes join."""
    order = [op.op_id for op in sdg.topological()]
    ok = {i for i in order if fusible(sdg, sdg.ops[i]) and not (static_only and any(
        _elements(sdg, sdg.tensors[TensorId(i, k)].shape) is None
        for k in range(sdg.ops[i].num_outputs)))}
    need = demands(sdg, order)
    ext = extendable(sdg, order, need)
    drops = partial_roots(sdg, order)
    late = after_ended(sdg)  # joins never cross it: see after_ended
    graphs, risky = _graphs(sdg, {_names(sdg.ops[i]) for i in ok} | {()})
    has = {i: set(_names(op)) for i, op in sdg.ops.items()}
    escapes = {names: Escapes(has, r, *graphs[()]) for names, r in risky.items() if r}
    parent = {i: i for i in sdg.ops}
    members: dict[int, list[int]] = {i: [i] for i in sdg.ops}
    gneed = dict(need)  # a group's demand (a fresh one per group that mixes demands)
    gext = dict(ext)  # whether all its members may run at more points
    cache: dict[tuple[int, tuple[str, ...]], Interval] = {}
    effort = Work(TUNING.grouping_effort)

    def find(i: int) -> int:
        while parent[i] != parent[parent[i]]:
            parent[i] = parent[parent[i]]
        return parent[i]

    def members_of(i: int) -> list[int]:
        return members[find(i)]

    def joins(a: int, b: int, names: tuple[str, ...]) -> bool:
        ga, gb = set(members[a]), set(members[b])
        for m in members[a] + members[b]:  # a read of one by the other at another point
            for e in sdg.in_edges[m]:
                if ((e.src.op_id in gb if m in ga else e.src.op_id in ga)
                        and not _joinable(sdg, e, ok)):
                    return False
        # the graph of the region's variables leaves out reads that move along one of
        # them that every read moves the same way: no path through one returns to its
        # start along it. Along a variable the region lacks such a path may well return
        # (it enters the variable and leaves it again: the batched `t < limit` of E5's
        # env step, read by the recurrence at each t, and the batched rewards reading
        # every t of the loop), so those reads stay; `returns` sums paths exactly.
        # Nor does a path through an op without such a variable keep its coordinate
        # along it (`grouping_escapes`): joins such a path may link are summed too.
        def dist(e: Edge) -> Interval:
            key = (id(e), names)
            if key not in cache:
                cache[key] = edge_distance(sdg, e, names)
            return cache[key]

        # along a variable read both ways (BPTT's h[t-1] and dh[t+1]) the region's own
        # paths back to itself must all ask for one direction (`orderable`)
        if set(names) - risky[names] and not orderable(sdg, members[a] + members[b],
                                                         members_of, names, dist, effort):
            return False
        succ = graphs[names][0]
        if not (a in succ[b] or detour(succ, a, b) or detour(succ, b, a)) and not (
                names in escapes and escapes[names].undecided(a, b)):
            return True
        both = ga | gb
        return not (returns(sdg, members[a], gb, both, members_of, names, dist, effort)
                    or returns(sdg, members[b], ga, both, members_of, names, dist, effort))

    for sink in order:
        if sink not in ok:
            continue
        for e in sdg.in_edges[sink]:
            if not _joinable(sdg, e, ok) or drops[e.src.op_id] != drops[sink]:
                continue
            if (e.src.op_id in late) != (sink in late):
                continue
            a, b = find(e.src.op_id), find(sink)
            if a == b or len(members[a]) + len(members[b]) > max_size:
                continue
            if gneed[a] != gneed[b] and not (gext[a] and gext[b]):
                continue
            if not joins(a, b, _names(sdg.ops[sink])):
                continue
            parent[b] = a
            members[a] += members.pop(b)
            if gneed[a] != gneed[b]:
                gneed[a] = frozenset({("runs where any member must", str(a))})
            gext[a] = gext[a] and gext[b]
            for succ, pred in graphs.values():
                _merge(succ, pred, a, b)
            for esc in escapes.values():
                esc.merged(a, b)
    if effort.refused:
        _log.info("grouping: search effort spent (%d units); %d joins refused unsearched",
                  effort.limit - effort.left, effort.refused)
    rank = {i: k for k, i in enumerate(order)}
    return [sorted(ms, key=rank.__getitem__) for ms in members.values() if len(ms) > 1]


Graph = tuple[dict[int, set[int]], dict[int, set[int]]]


def _names(op: Op) -> tuple[str, ...]:
    return tuple(v.name for v in op.domain.variables)


def _graphs(sdg: SDG, spaces: set[tuple[str, ...]]
            ) -> tuple[dict[tuple[str, ...], Graph], dict[tuple[str, ...], set[str]]]:
    """For each tuple of a region's variables, the reads (successors, predecessors) that
    a path returning to the same point of such a region may take: every read but those
    moving along one of its variables that all reads move the same way (the iteration
    dim's `w[i-1]`); and those variables (the space `()` keeps every read)."""
    _, interval_of = zero_distance_oracle(sdg)
    every = [e for es in sdg.in_edges.values() for e in es]
    edges = [e for e in every if e.src.op_id != e.sink]
    lows: dict[str, float] = {}
    highs: dict[str, float] = {}
    for e in every:
        for n, (lo, hi) in interval_of(e).items():
            lows[n], highs[n] = min(lows.get(n, INF), lo), max(highs.get(n, -INF), hi)
    monotone = {n for n in lows if lows[n] >= 0 or highs[n] <= 0}
    out: dict[tuple[str, ...], Graph] = {}
    risky: dict[tuple[str, ...], set[str]] = {}
    for names in spaces:
        along = risky[names] = monotone & set(names)
        succ: dict[int, set[int]] = {i: set() for i in sdg.ops}
        pred: dict[int, set[int]] = {i: set() for i in sdg.ops}
        for e in edges:
            if all(lo <= 0 <= hi for n, (lo, hi) in interval_of(e).items() if n in along):
                succ[e.src.op_id].add(e.sink)
                pred[e.sink].add(e.src.op_id)
        out[names] = (succ, pred)
    return out, risky


def _merge(succ: dict[int, set[int]], pred: dict[int, set[int]], a: int, b: int) -> None:
    """Group `b` joined group `a` (representatives)."""
    succ[a] = (succ[a] | succ.pop(b)) - {a, b}
    pred[a] = (pred[a] | pred.pop(b)) - {a, b}
    for x in succ[a]:
        pred[x] = {a if y == b else y for y in pred[x]} - {x}
    for x in pred[a]:
        succ[x] = {a if y == b else y for y in succ[x]} - {x}


def fuse(sdg: SDG, members: list[int], cfg: ExecutionConfig) -> RegionOp:
    """Replace `members` (in dependence order) by one region op reading what they read from
    outside and giving every value that is read outside (through the SDG helpers)."""
    position = {m: k for k, m in enumerate(members)}
    inputs: list[tuple[TensorId, IndexSequence]] = []
    sites: list[str] = []  # the user's line of each input read, for errors after grouping
    slot: dict[tuple[TensorId, str], int] = {}
    reads: list[tuple[Ref, ...]] = []
    for m in members:
        refs = []
        for e in sdg.in_edges[m]:
            if e.src.op_id in position and is_basis(e, sdg):
                refs.append(Ref(position[e.src.op_id], e.src.output_id))
                continue
            key = (e.src, str(e.expr))
            if key not in slot:
                slot[key] = len(inputs)
                inputs.append((e.src, e.expr))
                sites.append(e.site or sdg.ops[m].site)
            refs.append(Ref(REGION_INPUT, slot[key]))
        reads.append(tuple(refs))
    outs = [TensorId(m, k) for m in members for k in range(sdg.ops[m].num_outputs)
            if any(e.sink not in position for e in sdg.readers(TensorId(m, k)))]
    first = sdg.ops[members[0]]
    # A region made of internal ops first (a pass's permute) still names the user's line.
    site = next((sdg.ops[m].site for m in members if sdg.ops[m].site), "")
    body = tagged_body(sdg, members,
                       tuple(bind_bounds(sdg.ops[m], sdg.bound_defs) for m in members))
    infos = [sdg.tensors[t] for t in outs]
    sizes = [_elements(sdg, sdg.read_shape(Edge(-1, 0, src, expr))) for src, expr in inputs]
    sizes += [_elements(sdg, i.shape) for i in infos]
    static = all(n is not None for n in sizes)
    elements = max((n for n in sizes if n is not None), default=0)
    region = RegionOp(op_id=sdg.new_id(), domain=first.domain, site=site, body=body,
                      reads=tuple(reads),
                      outputs=tuple(Ref(position[t.op_id], t.output_id) for t in outs),
                      compiled=compiled(cfg, elements, static),
                      generated=cfg.enable_codegen_dataflows, elements=elements,
                      input_types=tuple(sdg.tensors[src].dtype for src, _ in inputs),
                      scratch_bytes=scratch_bytes(sdg, members, reads, outs))
    sdg.add_op(region, [], [i.shape for i in infos], [i.dtype for i in infos])
    for k, ((src, expr), where) in enumerate(zip(inputs, sites)):
        sdg.add_edge(Edge(region.op_id, k, src, expr, None, where))
    for k, t in enumerate(outs):
        sdg.replace_all_uses(t, TensorId(region.op_id, k), where=_outside(position))
    sdg.remove_ops(members)
    return region


def scratch_bytes(sdg: SDG, members: list[int], reads: list[tuple[Ref, ...]],
                  outs: list[TensorId]) -> int:
    """The most bytes of member values alive at once while the region runs: each value
    lives from its member until its last reader in the body (a region output until the
    end); views are counted in full (an upper bound); 0 when a shape is not static."""
    dies: dict[tuple[int, int], int] = {}  # (position, output) -> the last position using it
    for k, m in enumerate(members):
        for j in range(sdg.ops[m].num_outputs):
            dies[(k, j)] = k
    for k, refs in enumerate(reads):
        for r in refs:
            if not r.is_input:
                dies[(r.member, r.output)] = k
    position = {m: k for k, m in enumerate(members)}
    for t in outs:
        dies[(position[t.op_id], t.output_id)] = len(members)
    freed = [0] * (len(members) + 1)
    made = [0] * len(members)
    for (k, j), end in dies.items():
        info = sdg.tensors[TensorId(members[k], j)]
        n = _elements(sdg, info.shape)
        if n is None:
            return 0
        made[k] += n * info.dtype.repr_bytes
        freed[end] += n * info.dtype.repr_bytes
    live = peak = 0
    for k in range(len(members)):
        live += made[k]
        peak = max(peak, live)
        live -= freed[k]
    return peak


def _outside(position: dict[int, int]) -> Callable[[Edge], bool]:
    return lambda e: e.sink not in position


def _elements(sdg: SDG, shape: Shape) -> int | None:
    """Elements per point (None when the shape varies with a loop variable)."""
    if shape.vars_used():
        return None
    try:
        return math.prod(shape.evaluate(sdg.bound_defs))
    except KeyError:
        return None


def region_members(sdg: SDG) -> Iterable[RegionOp]:
    """The regions of a graph (tests, reports)."""
    return (op for op in sdg.ops.values() if isinstance(op, RegionOp))
