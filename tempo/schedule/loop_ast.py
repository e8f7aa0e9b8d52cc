"""Loop tree → our schedule tree (the AST the runtime turns into Python), without asking
isl to generate code for the whole program: loop bounds are the exact range of the
executed points under each loop (isl `dim_min`/`dim_max`), each op is guarded only where
its executed domain is smaller than its loop's range (`gist`), and each stored point is
freed right after its last use (isl `lexmax` over the producer's and readers' times; a
small isl AST per free when several points go at once). Work grows with the number of
ops, not with how they interleave."""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from tempo.core.sdg import SDG, TensorId
from tempo.schedule.ast_convert import ast_to_tree, expr_py
from tempo.schedule.grouping import is_basis
from tempo.schedule.isl_program import Analysis, shape_key, stmt_name
from tempo.schedule.loop_tree import Leaf, LoopNode, TreeNode
from tempo.schedule.tree import Exec, Free, If, Loop, Node, Seq

Terms = list[int | tuple[str, int] | tuple[str, int, int]]
Shifts = dict[int, dict[str, int]]  # op -> loop var -> s: its point p runs in iteration p + s


def param_form(s: isl.Set) -> isl.Set:
    """A set over an op's points as a parameter set named by its variables, so the sets
    of different ops live in one space and can be united and compared."""
    n = s.dim(isl.dim_type.set)
    return s.move_dims(isl.dim_type.param, s.dim(isl.dim_type.param), isl.dim_type.set,
                       0, n).params()


def _position(terms: Terms) -> int:
    """An op's place in its innermost sequence: the int that ends its time vector."""
    last = terms[-1]
    assert isinstance(last, int), terms
    return last


def _param_names(s: isl.Set) -> set[str]:
    """Names of the parameters of `s` (isl names every parameter; the stub allows None)."""
    names = {s.get_dim_name(isl.dim_type.param, k) for k in range(s.dim(isl.dim_type.param))}
    return {n for n in names if n is not None}


def _drop_params(s: isl.Set, keep: set[str]) -> isl.Set:
    for k in reversed(range(s.dim(isl.dim_type.param))):
        if s.get_dim_name(isl.dim_type.param, k) not in keep:
            s = s.project_out(isl.dim_type.param, k, 1)
    return s


_FREE_PROBLEMS: dict[tuple[object, ...], list[tuple[int, isl.Set]]] = {}
_FREE_ASTS: dict[tuple[str, str], isl.AstNode] = {}


@dataclass
class _FreeStatement:
    """The one user statement (`F`) of a free's small isl AST, for `ast_to_tree`."""

    frees: dict[str, list[TensorId]]
    groups: dict[int, list[int]] = field(default_factory=dict)
    after_group: dict[int, list[TensorId]] = field(default_factory=dict)


class _FreesAt:
    """Free statements hung after one op: (tensors, set of points to free, parametrised
    by the op's point)."""

    def __init__(self) -> None:
        self.points: list[tuple[list[TensorId], isl.Set]] = []
        self.same_point: list[TensorId] = []


class Lowering:
    def __init__(self, sdg: SDG, an: Analysis, tree: list[TreeNode],
                 times: dict[int, Terms], sched_op: dict[int, isl.UnionMap],
                 shifts: Shifts | None = None) -> None:
        self.sdg, self.an, self.tree = sdg, an, tree
        self.times, self.sched_op = times, sched_op
        self.shifts = {o: s for o, s in (shifts or {}).items() if any(s.values())}
        # Each op's executed points in loop-counter space (a shifted op's, moved by its shift)
        self.pf = {o: param_form(self._to_counters(o, an.executed[stmt_name(o)]))
                   for o in times}
        self.bound_names = set(an.params)
        self.frees: dict[int, _FreesAt] = {}
        # Keyed by id(ctx); each entry holds its ctx so the id stays unique while cached.
        self._builds: dict[int, tuple[isl.Set, isl.AstBuild]] = {}
        self._conds: dict[tuple[int, str], tuple[isl.Set, str]] = {}

    # ------------------------------------------------------------------ shifts
    def _counter_map(self, o: int) -> isl.Map | None:
        """`{ S[point] -> S[counters] }` of a shifted op (None: not shifted)."""
        by = self.shifts.get(o)
        if by is None:
            return None
        names = [v.name for v in self.sdg.ops[o].domain.variables]
        moved = [f"{n} + {by[n]}" if by.get(n) else n for n in names]
        return isl.Map(f"{self.an.decl} -> {{ {stmt_name(o)}[{', '.join(names)}] -> "
                       f"{stmt_name(o)}[{', '.join(moved)}] }}")

    def _to_counters(self, o: int, pts: isl.Set) -> isl.Set:
        m = self._counter_map(o)
        if m is None:
            return pts
        out = pts.apply(m)
        for k, v in enumerate(self.sdg.ops[o].domain.variables):
            out = out.set_dim_name(isl.dim_type.set, k, v.name)
        return out

    def point(self, o: int) -> tuple[str, ...]:
        """The op's point as expressions of the loop counters."""
        by = self.shifts.get(o, {})
        return tuple(f"({v.name} - {by[v.name]})" if by.get(v.name) else v.name
                     for v in self.sdg.ops[o].domain.variables)

    # ------------------------------------------------------------------ frees
    def place_frees(self, stored: list[TensorId]) -> None:
        parent = self._parents()
        width = max(len(t) for t in self.times.values()) if self.times else 1
        for tid in stored:
            p = tid.op_id
            if p not in self.times:
                continue
            readers = [e for e in self.sdg.readers(tid) if e.sink in self.times]
            last = self._same_body_last(p, readers, parent)
            if last is not None:
                self.frees.setdefault(last, _FreesAt()).same_point.append(tid)
                continue
            self._general_free(tid, readers, width)

    def _parents(self) -> dict[int, int]:
        out: dict[int, int] = {}

        def walk(nodes: list[TreeNode], pid: int) -> None:
            for n in nodes:
                if isinstance(n, Leaf):
                    out[n.op_id] = pid
                else:
                    walk(n.body, id(n))

        walk(self.tree, 0)
        return out

    def _same_body_last(self, p: int, readers: list, parent: dict[int, int]) -> int | None:
        """The op after which every point of `p` can go: readers all read it at their own
        point from the same loop body, and the last of them runs wherever `p` does."""
        if any(parent[e.sink] != parent[p] or not is_basis(e, self.sdg) for e in readers):
            return None
        if any(self.shifts.get(e.sink) != self.shifts.get(p) for e in readers):
            return None  # (shifted apart: they run in different iterations)
        if not readers:
            return p
        last = max((e.sink for e in readers), key=lambda o: _position(self.times[o]))
        if _position(self.times[last]) < _position(self.times[p]):
            return None
        return last if self.pf[p].is_subset(self.pf[last]) else None

    @staticmethod
    def _pad(terms: Terms, width: int) -> Terms:
        return [*terms, *([0] * (width - len(terms)))]

    def _general_free(self, tid: TensorId, readers: list, width: int) -> None:
        """Free each point after its last use, found by isl's lexmax. Repeated structures
        (layers) give the same problem up to names and positions: solved once."""
        p = tid.op_id
        involved = [p] + [e.sink for e in readers]
        key = self._problem_key(p, readers, width)
        hit = _FREE_PROBLEMS.get(key)
        if hit is None:
            hit = [(involved.index(q), pts) for q, pts in self._solve_free(tid, readers)]
            if len(_FREE_PROBLEMS) > 4096:
                _FREE_PROBLEMS.clear()
            _FREE_PROBLEMS[key] = hit
        for k, pts in hit:
            self.frees.setdefault(involved[k], _FreesAt()).points.append(([tid], pts))

    def _problem_key(self, p: int, readers: list, width: int) -> tuple[object, ...]:
        ops_ = [p] + [e.sink for e in readers]
        padded = [self._pad(self.times[o], width) for o in ops_]
        canon = []
        for k in range(width):
            vals = sorted({row[k] for row in padded if isinstance(row[k], int)})
            rank = {v: r for r, v in enumerate(vals)}
            canon.append(tuple(rank.get(row[k], row[k]) for row in padded))
        edges = tuple((shape_key("edge", self.sdg, e, self.an.decl), str(self.pf[e.sink]))
                      for e in readers)
        return (repr(self.sdg.ops[p].domain), str(self.pf[p]), edges, tuple(canon))

    def _solve_free(self, tid: TensorId, readers: list) -> list[tuple[int, isl.Set]]:
        """(op, points of `tid` freed after it, parametrised by the op's point) pairs."""
        p = tid.op_id
        uses = self.sched_op[p]
        for e in readers:
            uses = uses.union(self.an.edge_maps[id(e)].apply_range(self.sched_op[e.sink]))
        last = uses.lexmax()
        out: list[tuple[int, isl.Set]] = []
        for q in dict.fromkeys([p] + [e.sink for e in readers]):
            # Times are unique per op instance: composing with q's inverse keeps q's part.
            at_q = last.apply_range(self.sched_op[q].reverse())
            if at_q.is_empty():
                continue
            rel = isl.Map.from_union_map(at_q).reverse()
            shift = self._counter_map(q)
            if shift is not None:  # parametrised by q's loop counters, not its point
                rel = shift.reverse().apply_range(rel)
            qvars = [v.name for v in self.sdg.ops[q].domain.variables]
            for k, name in enumerate(qvars):
                rel = rel.set_dim_name(isl.dim_type.in_, k, name)
            for k in range(rel.dim(isl.dim_type.out)):
                rel = rel.set_dim_name(isl.dim_type.out, k, f"f{k}")
            pts = rel.move_dims(isl.dim_type.param, rel.dim(isl.dim_type.param),
                                isl.dim_type.in_, 0, len(qvars)).range()
            out.append((q, pts.coalesce()))
        return out

    # ------------------------------------------------------------------ lowering
    def lower(self) -> Node:
        return Seq(self._nodes(self.tree, self.an.context.params()))

    def _nodes(self, nodes: list[TreeNode], ctx: isl.Set) -> list[Node]:
        """Lowered children; consecutive ops under the same guard share one `if`."""
        out: list[Node] = []
        last_cond: str | None = None
        last_body: Seq | None = None  # the body of the open `if last_cond:`
        for n in nodes:
            if isinstance(n, LoopNode):
                out += self._loop(n, ctx)
                last_cond = None
                continue
            cond, body = self._leaf(n.op_id, ctx)
            if cond is None:
                out += body
            elif cond == last_cond and last_body is not None:
                last_body.children += body
            else:
                last_body = Seq(body)
                out.append(If(cond, last_body))
            last_cond = cond
        return out

    def _leaf(self, o: int, ctx: isl.Set) -> tuple[str | None, list[Node]]:
        """The op's guard (None: always runs in its loop) and the op with the frees of
        the points whose last use it is."""
        body: list[Node] = [Exec(o, self.point(o))]
        guard = self.pf[o].gist(ctx)
        cond = None if guard.plain_is_universe() else self._cond(guard, ctx)
        at = self.frees.get(o)
        if at is not None:
            for tid in at.same_point:
                body.append(Free(tid, self.point(tid.op_id)))
            for tids, pts in at.points:
                body.append(self._free_code(tids, pts, self.pf[o].intersect(ctx)))
        return cond, body

    def _free_code(self, tids: list[TensorId], pts: isl.Set, ctx: isl.Set) -> Node:
        """Code freeing the points `pts` (a set parametrised by the loop counters); one
        point per iteration is an expression per coordinate, several need loops (an isl
        AST of that small set)."""
        pts = pts.intersect_params(ctx)
        point = self._single_point(pts, ctx)
        if point is not None:
            guard = pts.params().gist(ctx)
            frees: Node = Seq([Free(t, point) for t in tids])
            if guard.plain_is_universe():
                return frees
            return If(self._cond(guard, ctx), frees)
        key = (str(pts), str(ctx))
        ast = _FREE_ASTS.get(key)
        if ast is None:
            named = pts.intersect_params(ctx).set_tuple_name("F")
            sched = isl.Map.identity(named.get_space().map_from_set()).intersect_domain(named)
            sched = sched.reset_tuple_id(isl.dim_type.out)
            ast = isl.AstBuild.from_context(ctx).node_from_schedule_map(
                isl.UnionMap.from_map(sched))
            if len(_FREE_ASTS) > 4096:
                _FREE_ASTS.clear()
            _FREE_ASTS[key] = ast
        return ast_to_tree(ast, _FreeStatement({"F": tids}))

    def _single_point(self, pts: isl.Set, ctx: isl.Set) -> tuple[str, ...] | None:
        """Each coordinate as an expression of the counters, if `pts` is one point."""
        where = ctx.intersect(pts.params())
        out = []
        for k in range(pts.dim(isl.dim_type.set)):
            lo, hi = pts.dim_min(k), pts.dim_max(k)
            if not lo.is_equal(hi):
                return None
            out.append(self._expr(lo, where))
        return tuple(out)

    def _loop(self, n: LoopNode, ctx: isl.Set) -> list[Node]:
        leaves = _leaves(n)
        outer = _param_names(ctx)
        keep = outer | self.bound_names | {n.var}
        u = _drop_params(self.pf[leaves[0]], keep)
        for o in leaves[1:]:
            u = u.union(_drop_params(self.pf[o], keep))
        u = u.intersect(ctx).coalesce()
        if u.is_empty():
            return []  # only ops that never run (they feed untaken branches): no loop
        us = isl.Set.from_params(u)
        us = us.move_dims(isl.dim_type.set, 0, isl.dim_type.param,
                          us.find_dim_by_name(isl.dim_type.param, n.var), 1)
        nonempty = us.params()
        lo, hi = us.dim_min(0), us.dim_max(0)
        inner_ctx = ctx.intersect(nonempty)
        if inner_ctx.is_empty():  # no iteration under these bounds (e.g. t+20 < T with T=12)
            return []
        names = ", ".join(sorted(keep))
        v = isl.PwAff(f"[{names}] -> {{ [({n.var})] }}")
        it = lo.le_set(v).intersect(v.le_set(hi)).intersect(inner_ctx).coalesce()
        lo_s = self._expr(lo, inner_ctx)
        hi_s = self._expr(hi, inner_ctx)
        body = Seq(self._nodes(n.body, it))
        loop: Node = (Loop(n.var, lo_s, f"{hi_s} + 1", 1, body) if n.direction > 0
                      else Loop(n.var, hi_s, f"{lo_s} - 1", -1, body))
        gist = nonempty.gist(ctx)
        if not gist.plain_is_universe():
            loop = If(self._cond(gist, ctx), loop)
        return [loop]

    def _expr(self, pa: isl.PwAff, ctx: isl.Set) -> str:
        return expr_py(self._build(ctx).expr_from_pw_aff(pa.gist_params(ctx)))

    def _cond(self, s: isl.Set, ctx: isl.Set) -> str:
        key = (id(ctx), str(s))
        if key not in self._conds:
            self._conds[key] = (ctx, expr_py(self._build(ctx).expr_from_set(s)))
        return self._conds[key][1]

    def _build(self, ctx: isl.Set) -> isl.AstBuild:
        """One AST build per context (the ops of one loop body share theirs)."""
        hit = self._builds.get(id(ctx))
        if hit is None:
            hit = self._builds[id(ctx)] = (ctx, isl.AstBuild.from_context(ctx))
        return hit[1]


def _leaves(n: LoopNode) -> list[int]:
    out: list[int] = []
    for c in n.body:
        out += [c.op_id] if isinstance(c, Leaf) else _leaves(c)
    return out
