"""Boolean bounds in generated code (API §7 item 10): the dimension a bool tensor ends,
and where its stop test runs in a loop the scheduler shifted (schedule/loop_tree.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tempo.core import naming, ops
from tempo.core.errors import BoundError, UnsupportedError
from tempo.core.index_expr import Symbol
from tempo.core.sdg import SDG, TensorId
from tempo.schedule.tree import Exec, Free, If, Loop, Node, Offload, Seq, While

if TYPE_CHECKING:
    from tempo.runtime.codegen import CodeGen


@dataclass(frozen=True)
class Ending:
    """Dimension `var` (bound `bound`, at most `maximum`) ends after the first point where
    every element of boolean tensor `tensor` is true (API §7 item 10)."""

    var: str
    bound: str
    maximum: int
    tensor: TensorId
    # the BoundError's text when the maximum is reached with no stop (a maximum the user did
    # not give: `{T: done}` takes the config's); None: the maximum ends the dimension
    exhausted: str | None = None
    site: str = ""

    def raise_exhausted(self) -> None:
        raise BoundError(self.exhausted or "", site=self.site)


NOT_ENDED = 1 << 62  # ENDS value while no stop point has been seen


def ended(x: Any) -> bool:
    """All elements true (a scalar or a batch of per-sequence flags; any backend)."""
    return bool(x.all()) if hasattr(x, "all") else bool(x)


def counter_lag(at: str | None, counter: str) -> int | None:
    """How many iterations of the loop over `counter` run before the point `at` (a shifted
    op's point is `counter - s`); None: not such a point."""
    if at is None:
        return None
    bare = at.replace("(", "").replace(")", "").strip()
    if bare == counter:
        return 0
    m = re.fullmatch(rf"{re.escape(counter)} - (\d+)", bare)
    return int(m.group(1)) if m else None


def execs(node: Node) -> list[Exec]:
    """The Execs under `node`, in the order they are emitted."""
    if isinstance(node, Exec):
        return [node]
    if isinstance(node, Seq):
        return [e for c in node.children for e in execs(c)]
    if isinstance(node, (Loop, While)):
        return execs(node.body)
    if isinstance(node, If):
        return execs(node.then) + (execs(node.else_) if node.else_ is not None else [])
    return []


IMPURE = (ops.UDFSourceOp, ops.MapUDFOp, ops.SinkUDFOp)
"""Ops that call the user's Python: never at a point past a dimension's end."""


def lag_of(sdg: SDG, ex: Exec, end: Ending, loop: Loop) -> int | None:
    """Iterations of `loop` that run before `ex`'s point along the ended dimension."""
    op = sdg.ops[ex.op_id]
    at = {v.name: p for v, p in zip(op.domain.variables, ex.point)}.get(end.var)
    return None if at is None else counter_lag(at, loop.counter)


class SameIteration:
    """Which Execs of a loop over an ended dimension read, in one iteration, a point
    another makes in that same iteration. A read at `var + c` (any index expression, a
    condition, a slice) is evaluated at sample iterations, both ends included, with the
    bounds' values (the ended bound at its maximum); what cannot be evaluated (another
    dimension's variable) counts as read."""

    def __init__(self, sdg: SDG, loop: Loop, end: Ending, env: dict[str, Any]) -> None:
        self.sdg, self.loop, self.end = sdg, loop, end
        known = {**{k: v for k, v in env.items() if isinstance(v, int)}}
        top = end.maximum if end.maximum > 0 else int(env.get(end.bound, 0) or 0)
        known[end.bound] = top
        self.values = {Symbol(k, is_bound=True): v for k, v in known.items()}
        n = max(top, 1)
        self.samples = sorted({*range(min(n, 12)), *range(max(n - 3, 0), n)})

    def reads(self, reader: Exec, writer: Exec) -> bool:
        edges = [e for e in self.sdg.in_edges[reader.op_id] if e.src.op_id == writer.op_id]
        if not edges:
            return False
        wop = self.sdg.ops[writer.op_id]
        lr = lag_of(self.sdg, reader, self.end, self.loop)
        lw = lag_of(self.sdg, writer, self.end, self.loop)
        names = [v.name for v in wop.domain.variables]
        if lr is None or lw is None or self.end.var not in names:
            return True
        k, var = names.index(self.end.var), Symbol(self.end.var)
        for e in edges:
            for c in self.samples:
                values = {**self.values, var: c - lr}
                if c - lr < 0:
                    continue
                try:
                    if e.cond is not None and not e.cond.evaluate(values):
                        continue
                    r = e.expr[k].evaluate(values)
                except (KeyError, TypeError):
                    return True
                q = c - lw  # the writer's point in iteration c
                if (r.start <= q < r.stop) if isinstance(r, slice) else r == q:
                    return True
        return False


def stop_first(sdg: SDG, loop: Loop, stop: Exec, end: Ending, env: dict[str, Any]) -> None:
    """Move the stop test of a shifted loop, with what it reads in its iteration, before
    the rest of that iteration, so ops of lesser lag (a source read ahead, `x[t + 1]`)
    run after it and can be skipped past the end (`lagged_guards`) instead of calling the
    user's source once more. Nothing moves when the test itself reads such an op in its
    iteration (the user's stop condition needs that point), or when a moved part frees a
    tensor that something it moves ahead of still reads."""
    body = loop.body
    if not isinstance(body, Seq):
        return
    kids = body.children
    k = next((j for j, c in enumerate(kids) if any(x is stop for x in execs(c))), None)
    if k is None:
        return
    same = SameIteration(sdg, loop, end, env)
    lag = lag_of(sdg, stop, end, loop)
    runs = [execs(c) for c in kids]
    moved = {k}
    grew = True
    while grew:
        grew = False
        for j in range(k):
            if j not in moved and any(same.reads(r, w) for m in moved if m > j
                                      for r in runs[m] for w in runs[j]):
                moved.add(j)
                grew = True
    ahead = [j for j in range(k) if j not in moved]
    if lag is None or not any(isinstance(sdg.ops[x.op_id], IMPURE)
                              and (lag_of(sdg, x, end, loop) or 0) < lag
                              for j in ahead for x in runs[j]):
        return
    later: list[tuple[Free | Offload, list[str]]] = []  # frees waiting for ops moved past
    for m in moved:
        read = {e.src for j in ahead if j < m for x in runs[j] for e in sdg.in_edges[x.op_id]}
        for f in frees(kids[m]):
            if f.tensor in read:
                path = _conditions(kids[m], f)
                if path is None:
                    return
                later.append((f, path))
    for gone, _ in later:
        _drop(kids, gone)
    moved_frees: list[Node] = []
    for gone, path in later:
        node: Node = gone
        for cond in reversed(path):
            node = If(cond, Seq([node]))
        moved_frees.append(node)
    body.children = ([kids[j] for j in sorted(moved)] + [kids[j] for j in ahead]
                     + moved_frees + kids[k + 1:])


def _conditions(node: Node, target: Node) -> list[str] | None:
    """The If conditions around `target` under `node` (outermost first), None when it is
    under a loop or not there: a free moved out of them must keep them."""
    if node is target:
        return []
    kids: list[tuple[Node | None, str | None]] = []
    if isinstance(node, Seq):
        kids = [(c, None) for c in node.children]
    elif isinstance(node, If):
        kids = [(node.then, node.cond), (node.else_, f"not ({node.cond})")]
    for c, cond in kids:
        if c is None:
            continue
        path = _conditions(c, target)
        if path is not None:
            return path if cond is None else [cond, *path]
    return None


def _drop(kids: list[Node], target: Node) -> None:
    """Remove `target` from the Seq (or If branch) holding it."""
    for c in kids:
        if isinstance(c, Seq):
            if any(x is target for x in c.children):
                c.children = [x for x in c.children if x is not target]
                return
            _drop(c.children, target)
        elif isinstance(c, If):
            for branch in ("then", "else_"):
                sub = getattr(c, branch)
                if sub is target:
                    setattr(c, branch, Seq([]))
                    return
                if sub is not None:
                    _drop([sub], target)


def frees(node: Node) -> list[Free | Offload]:
    """The frees and offloads under `node`."""
    if isinstance(node, (Free, Offload)):
        return [node]
    if isinstance(node, Seq):
        return [f for c in node.children for f in frees(c)]
    if isinstance(node, (Loop, While)):
        return frees(node.body)
    if isinstance(node, If):
        return frees(node.then) + (frees(node.else_) if node.else_ is not None else [])
    return []


def lagged_guards(sdg: SDG, loop: Loop, stop: Exec, end: Ending, lag: int,
                  env: dict[str, Any]) -> dict[int, tuple[str, str]]:
    """The guards of a stop test run `lag` iterations after its point (its component is
    shifted): the iteration finding the stop has also run ops of lesser lag at points past
    the end. After the test, ops calling the user's Python there, and ops reading in that
    iteration what such an op makes, are guarded by the end (id(Exec) -> (var, the
    point that must exist)); a sink before the test, or an op of greater lag (it would
    need iterations after the stop), is unsupported -- never a sink called past the end."""
    guards: dict[int, tuple[str, str]] = {}
    seen_stop = False
    same: SameIteration | None = None
    for ex in execs(loop.body):
        if ex is stop:
            seen_stop = True
            continue
        op = sdg.ops[ex.op_id]
        at = {v.name: p for v, p in zip(op.domain.variables, ex.point)}.get(end.var)
        c = None if at is None else counter_lag(at, loop.counter)
        if seen_stop and guards:  # reads a skipped point in its iteration: skipped too
            same = same or SameIteration(sdg, loop, end, env)
            held = [guards[id(w)][1] for w in execs(loop.body)
                    if id(w) in guards and same.reads(ex, w)]
            if held:
                guards[id(ex)] = (end.var, held[0])
                continue
        if at is None or c == lag:
            continue
        impure = isinstance(op, IMPURE)
        sink = isinstance(op, ops.SinkUDFOp)
        if c is None or c > lag or (sink and not seen_stop):
            raise UnsupportedError(
                f"the stop tensor ({naming.tensor_label(sdg, end.tensor)}) of dimension "
                f"{end.var} (bound {end.bound}) is computed {lag} iteration(s) after its "
                f"point, and {naming.op_label(op)} runs where the stop test cannot end it "
                "in time", site=end.site)
        if impure and seen_stop:
            guards[id(ex)] = (end.var, at if at.isidentifier() else f"({at})")
    return guards


def find_ended_loops(gen: CodeGen, node: Node, loops: tuple[Loop, ...] = ()) -> None:
    """Map each ending to the loop over its dimension that executes its tensor: the
    innermost loop around that Exec, whose counter is the tensor's point along `var`."""
    if isinstance(node, Seq):
        for c in node.children:
            find_ended_loops(gen, c, loops)
    elif isinstance(node, Loop):
        find_ended_loops(gen, node.body, (*loops, node))
    elif isinstance(node, While):
        find_ended_loops(gen, node.body, loops)
    elif isinstance(node, If):
        find_ended_loops(gen, node.then, loops)
        if node.else_ is not None:
            find_ended_loops(gen, node.else_, loops)
    elif isinstance(node, Exec) and node.op_id in gen.endings:
        end = gen.endings[node.op_id]
        op = gen.sdg.ops[node.op_id]
        at = gen._names(op, node.point).get(end.var)
        loop = loops[-1] if loops else None
        lag = None if loop is None or loop.step != 1 else counter_lag(at, loop.counter)
        if loop is None or lag is None:
            stop = naming.tensor_label(gen.sdg, end.tensor)
            raise UnsupportedError(
                f"the stop tensor ({stop}) of dimension {end.var} (bound "
                f"{end.bound}) is not computed one point at a time in the loop over "
                f"{end.var}: a boolean bound needs its tensor over that dimension and "
                "outer ones only", site=end.site)
        if lag:
            stop_first(gen.sdg, loop, node, end, gen.env)
            gen.lag_guards.update(lagged_guards(gen.sdg, loop, node, end, lag,
                                                 gen.env))
        gen.ended_loops[id(loop)] = end
        gen.ended_ops.setdefault(end.var, set()).update(x.op_id for x in execs(loop))


def stop_check(gen: CodeGen, node: Exec, pad: str) -> None:
    """The line that lowers the dimension's end when the stop tensor is true here."""
    from tempo.runtime.codegen import store_name  # codegen imports this module
    end = gen.endings[node.op_id]
    op = gen.sdg.ops[node.op_id]
    names = gen._names(op, node.point)
    key = gen._key([names[v.name] for v in op.domain.variables])
    val = f"{store_name(end.tensor)}[{key}]"
    gen.lines.append(f"{pad}if ended({val}):")
    gen.lines.append(f"{pad}    ENDS[{end.var!r}] = min(ENDS[{end.var!r}], "
                      f"{names[end.var]} + 1)")


def past_end_guards(gen: CodeGen, node: Node, inside: frozenset[str] = frozenset(),
                    clamped: frozenset[str] = frozenset()) -> None:
    """Guard the ops over an ended dimension that run outside the loop ending it (a nest
    over (b, t) after the loop over t that tests the stop): the schedule bounds their
    loops by the maximum, so each point runs only below the dimension's real extent
    (`gen.end_guards`: id(Exec) -> `point < bound`; the bound is the maximum until the
    loop ends it). An op whose points end k before the bound (`G[t] = x + G[t+1]` runs
    where t < T - 1) is guarded by `point < bound - k` (`bound_tails`), also in a loop
    clamped to the extent. `inside`: the dimensions whose ended loop holds `node`."""
    if isinstance(node, Seq):
        for c in node.children:
            past_end_guards(gen, c, inside, clamped)
    elif isinstance(node, (Loop, While)):
        end = gen.ended_loops.get(id(node))
        if end is None and isinstance(node, Loop) and clamp_of(gen, node) is not None:
            clamped = clamped | {node.counter}  # the loop stops at the extent itself
        past_end_guards(gen, node.body, inside | {end.var} if end is not None else inside,
                        clamped)
    elif isinstance(node, If):
        past_end_guards(gen, node.then, inside, clamped)
        if node.else_ is not None:
            past_end_guards(gen, node.else_, inside, clamped)
    elif isinstance(node, Exec):
        op = gen.sdg.ops[node.op_id]
        names = gen._names(op, node.point)
        conds = []
        for e in gen.endings.values():
            if e.var in inside or e.var not in names:
                continue
            k = bound_tails(gen).get((node.op_id, e.var), 0)
            if e.var not in clamped or k:
                conds.append(f"{names[e.var]} < {e.bound}" + (f" - {k}" if k > 0 else
                                                              f" + {-k}" if k else ""))
        if conds:
            gen.end_guards[id(node)] = " and ".join(conds)
    elif isinstance(node, Free):
        # the schedule placed frees for the maximum: with an op ending before the bound
        # (a tail), a point's last reader depends on the real end, so points over that
        # dimension stay stored outside its ending loop (until the run ends)
        tails = {var for _, var in bound_tails(gen)}
        dims = [v.name for v in gen.sdg.ops[node.tensor.op_id].domain.variables]
        if any(v in tails and v not in inside for v in dims):
            gen.kept_frees.add(id(node))


def bound_tails(gen: CodeGen) -> dict[tuple[int, str], int]:
    """(op, ended dimension) -> k != 0 when the op's executed domain ends k points before
    the dimension's bound: the schedule was made with the bound at its maximum, so such
    an op (one reading ahead, `G[t+1]`, only where a `t == T - 1` branch is not taken)
    would run up to the real end and read past it. k < 0: the op runs -k points past the
    bound (`h[t+1] = ...` gives h, and its adjoint, T + 1 points; the adjoint of h[T-1]
    reads the adjoint of h[T]), which a guard `t < T` would skip. The executed domains
    are analysed at the maximum and at one less: an end that moves with the bound is
    relative to it."""
    if gen.tails is not None:
        return gen.tails
    from tempo.schedule.isl_program import analyse, stmt_name
    gen.tails = {}
    base = {Symbol(k, is_bound=True): v for k, v in gen.bounds.items() if isinstance(v, int)}
    for end in gen.endings.values():
        over = [op for op in gen.sdg.ops.values()
                if end.var in [v.name for v in op.domain.variables]]
        top = base.get(Symbol(end.bound, is_bound=True))
        if not over or top is None or top < 3:
            continue
        highs: list[dict[int, int]] = []
        for m in (top, top - 1):
            try:
                an = analyse(gen.sdg, {**base, Symbol(end.bound, is_bound=True): m})
            except Exception:  # noqa: BLE001 - no tails then: the guard is as before
                highs = []
                break
            hi: dict[int, int] = {}
            for op in over:
                dom = an.executed.get(stmt_name(op.op_id))
                pos = [v.name for v in op.domain.variables].index(end.var)
                if dom is not None and not dom.is_empty():
                    hi[op.op_id] = int(dom.dim_max_val(pos).to_python())
            highs.append(hi)
        if len(highs) != 2:
            continue
        for op_id, h in highs[0].items():
            if highs[1].get(op_id) == h - 1 and h != top - 1:
                gen.tails[(op_id, end.var)] = top - 1 - h
        _drop_unmade_tails(gen, end.var)
    return gen.tails


def _drop_unmade_tails(gen: CodeGen, var: str) -> None:
    """An op that runs past the bound (a tail k < 0) does so only where what it reads
    there exists: the ending loop stops at the real end, so its ops have no point T, and
    an op reading one of them at `t + c` (c >= 0, unconditionally) has no point T either
    (`acc[i, t]` over a nest after the loop reading the recurrence the loop made), nor
    one reading such an op. Merges' conditional branches are decided with the real T."""
    made, tails = gen.ended_ops.get(var, set()), gen.tails
    assert tails is not None  # (bound_tails made it)
    changed = True
    while changed:
        changed = False
        for (op_id, v), k in list(tails.items()):
            if v != var or k >= 0:
                continue
            for e in gen.sdg.in_edges[op_id]:
                src = gen.sdg.ops[e.src.op_id]
                names = [w.name for w in src.domain.variables]
                if e.cond is not None or var not in names:
                    continue
                reach = -1 if e.src.op_id in made else -tails.get((e.src.op_id, var), 0) - 1
                if _offset(e.expr[names.index(var)], var) > reach + k + 1:
                    del tails[(op_id, var)]
                    changed = True
                    break


def _offset(m: Any, var: str) -> int:
    """How far past the reader's own point along `var` a read member reaches (x[t + 2]:
    2; a slice: its last point; a member not of `var`, e.g. a constant: 0)."""
    from tempo.core.index_expr import Slice, Symbol

    t = Symbol(var)
    try:
        top = (m.stop - 1) if isinstance(m, Slice) else m
        return int((top - t).simplify().try_eval() or 0) \
            if var in {u.name for u in top.vars_used()} else 0
    except Exception:  # noqa: BLE001 - not an offset of var: treat as its own point
        return 0


def clamp_of(gen: CodeGen, loop: Loop) -> str | None:
    """The bound that ends a loop over an ended dimension outside its ending loop, when
    every op in it runs at the counter's own point along that dimension (the loop then
    stops at the real extent instead of testing each point); else None."""
    if loop.step != 1 or id(loop) in gen.ended_loops:
        return None
    for end in gen.endings.values():
        if end.var != loop.counter:
            continue
        points = [gen._names(gen.sdg.ops[x.op_id], x.point).get(end.var) for x in execs(loop)]
        past = any(bound_tails(gen).get((x.op_id, end.var), 0) < 0 for x in execs(loop))
        if points and not past and all(p is None or counter_lag(p, loop.counter) == 0
                                       for p in points):
            return end.bound
    return None
