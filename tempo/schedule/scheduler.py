"""Scheduling: the loop nest comes from the program's dependence structure (`loop_tree`),
isl checks it exactly against every dependence, bounds its loops, guards its ops and
places each free at the last use of its point (`placement`, `loop_ast`). Programs the
structural scheduler cannot order (they need a schedule that interleaves one op's points
with another's, which isl's affine search can find) go to isl's own scheduler, run in an
interruptible worker. Work grows linearly with the program; isl's search did not."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import islpy as isl

from tempo.core import ops
from tempo.core.configs import TUNING
from tempo.core.index_expr import Symbol
from tempo.core.sdg import SDG, TensorId
from tempo.schedule import isl_worker
from tempo.schedule.ast_convert import ast_to_tree
from tempo.schedule.barrier_order import add_barrier_order, has_barrier, ordered_by_barriers
from tempo.schedule.cycles import definite_cycle, same_point_cycle
from tempo.schedule.isl_program import IslProgram, analyse, build_program
from tempo.schedule.loop_tree import LoopTreeBuilder, Unorderable
from tempo.schedule.placement import EdgeSigns, NotVerified, place
from tempo.schedule.tree import Exec, Free, Node, Seq

FORCE_ISL = False


@dataclass
class Schedule:
    tree: Node
    program: IslProgram | None
    timings_ms: dict[str, float] = field(default_factory=dict)


def compute_schedule(
    sdg: SDG, bounds: dict[Symbol, int], stored: list[TensorId]
) -> Schedule:
    """Schedule tree running every op and freeing every point of the `stored` tensors.

    Ops that run once and read only such ops (constants, weight preprocessing) form a
    prologue run before everything else; the structural scheduler (or isl) orders the
    rest. `FORCE_ISL` selects isl's scheduler (the previous path; the compile benchmark
    compares the two)."""
    t0 = time.perf_counter()
    prologue = static_prologue(sdg)
    cut = set(prologue) | set(unused_placeholders(sdg))
    rest = sdg.induced_subgraph(i for i in sdg.ops if i not in cut)
    in_prologue = set(prologue)
    epilogue = [Free(tid, ()) for tid in stored if tid.op_id in in_prologue]
    stored = [tid for tid in stored if tid.op_id in rest.ops]
    an = analyse(rest, bounds)
    add_barrier_order(rest, an)
    t1 = time.perf_counter()
    try:
        if FORCE_ISL:
            raise Unorderable([])
        signs = EdgeSigns(rest, an)
        builder = LoopTreeBuilder(rest, rest.ops, [v.name for v in rest.universe.variables],
                                  signs, signs.distance)
        loops = builder.build()
        t2 = time.perf_counter()
        out: Node = place(rest, an, loops, stored, builder.signs, builder.shifts)
        t3 = time.perf_counter()
        if prologue:
            out = Seq([*(Exec(op_id, ()) for op_id in prologue), out, *epilogue])
        t4 = time.perf_counter()
        timings = {"isl_analyse": (t1 - t0) * 1e3, "loop_tree": (t2 - t1) * 1e3,
                   "isl_place": (t3 - t2) * 1e3}
        return Schedule(out, None, timings)
    except NotVerified:
        unordered: list[int] = []  # a gap in the structural scheduler: isl's decides
    except Unorderable as exc:
        cycle = definite_cycle(rest, an, exc.ops)
        if cycle:  # a real cycle at one point: no scheduler can order it
            from tempo.schedule.explain import cycle_error

            raise cycle_error(rest, cycle) from None
        unordered = exc.ops
    sched, prog = None, None
    limit = TUNING.isl_schedule_cpu_s
    for group in (True, False):  # grouped first; a join can make isl fail, ungrouped not
        prog = build_program(rest, bounds, stored, an, group=group)
        t2 = time.perf_counter()
        validity = prog.deps.union(prog.free_deps)
        sc = (
            isl.ScheduleConstraints.on_domain(prog.domains)
            .set_context(prog.context)
            .set_validity(validity)
            .set_proximity(validity)
        )
        try:
            sched = isl_worker.compute_schedule(sc, limit)
            break
        except isl_worker.IslScheduleError:
            continue
        except isl_worker.IslTimeout as exc:
            from tempo.schedule.explain import isl_time_error

            raise isl_time_error(rest, unordered, exc.spent) from None
    if sched is None or prog is None:
        from tempo.schedule.explain import cycle_error, point_cycle_error
        from tempo.schedule.point_cycles import point_cycle

        cycle = same_point_cycle(rest, an)
        around = point_cycle(rest, bounds) if not cycle else None
        if around is not None:  # a placeholder reading itself around other points
            raise point_cycle_error(rest, *around)
        raise cycle_error(rest, cycle)
    t3 = time.perf_counter()
    build = isl.AstBuild.from_context(prog.context)
    ast = build.node_from_schedule(flattened(sched, prog.context))
    tree: Node = ast_to_tree(ast, prog)
    if prologue:
        tree = Seq([*(Exec(op_id, ()) for op_id in prologue), tree, *epilogue])
    t4 = time.perf_counter()
    timings = {
        "isl_analyse": (t1 - t0) * 1e3,
        "isl_build": (t2 - t1) * 1e3,
        "isl_schedule": (t3 - t2) * 1e3,
        "isl_ast": (t4 - t3) * 1e3,
    }
    return Schedule(tree, prog, timings)


def flattened(sched: isl.Schedule, context: isl.Set) -> isl.Schedule:
    """The schedule as one band of its flat map, every member's loops `separate`.

    isl's AST generator emitted, with its default loop type, two statements of one
    schedule dimension in a fixed order although their order there depends on an outer
    loop's value (accept6 c13, PPO with epochs: `S1(1, c0 - 1)` at `63 - 32 c0` after
    `S32(c0 - 1, 1)` at 0, so for c0 = 2 a point was read before it was made), both from
    the scheduler's tree and from its flat map; the flat map itself respects every
    validity dependence. Separated loops give each piece of the iteration space its own
    code, in which such an order is fixed."""
    flat = sched.get_map().intersect_params(context)
    dom = sched.get_domain().intersect_params(context)
    try:
        band = isl.Schedule.from_domain(dom).insert_partial_schedule(
            isl.MultiUnionPwAff.from_union_map(flat)).get_root().child(0)
        for k in range(band.band_n_member()):
            band = band.band_member_set_ast_loop_type(k, isl.ast_loop_type.separate)
        return band.get_schedule()
    except isl.Error:  # no band at all (a single statement): nothing to order
        return sched


def unused_placeholders(sdg: SDG) -> list[int]:
    """Placeholders without a definition that nothing reads (a definition the user got
    wrong was refused): there is nothing to compute and nobody to tell."""
    return [op.op_id for op in sdg.ops.values()
            if isinstance(op, ops.MergeOp) and not sdg.in_edges[op.op_id]
            and not sdg.out_edges.get(op.op_id)
            and not any(TensorId(op.op_id, k) in sdg.keep for k in range(op.num_outputs))]


def static_prologue(sdg: SDG) -> list[int]:
    """Ops over the empty domain whose inputs are all such ops, in creation order. Sinks
    and barriers stay out when the program has a barrier: it orders them."""
    chosen: list[int] = []
    seen: set[int] = set()
    barriers = has_barrier(sdg)
    for op in sdg.topological():
        if len(op.domain) or isinstance(op, ops.MergeOp):
            continue
        if barriers and ordered_by_barriers(op):
            continue
        if all(e.src.op_id in seen for e in sdg.in_edges[op.op_id]):
            chosen.append(op.op_id)
            seen.add(op.op_id)
    return chosen
