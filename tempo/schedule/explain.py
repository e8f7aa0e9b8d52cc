"""Why a needed point cannot be computed, in the user's words.

An out-of-range read drops points of its reader, and the drop travels to every op that needs
them; the op that finally fails is often a sink far from the mistake. `outside_error` walks
back from the needed points to the read that leaves its source's domain and names that
read's own line, the end it leaves by ("past the end T - 1 when t >= T - 5") and a fix that
applies at that end."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import islpy as isl

from tempo.core import index_expr as ie
from tempo.core import naming, ops
from tempo.core.errors import IndexExprError, ScheduleError, ScheduleTimeError
from tempo.core.sdg import SDG, Edge


def _read_outside(sdg: SDG, e: Edge, decl: str, context: isl.Set) -> isl.Set:
    from tempo.schedule.isl_program import read_outside

    return read_outside(sdg, e, decl, context)


@dataclass
class Trace:
    """The read that leaves its source: `edge`, at `points` of its reader."""

    edge: Edge
    points: isl.Set


def trace_root(
    sdg: SDG, op: ops.Op, where: isl.Set, decl: str, context: isl.Set,
    full: dict[str, isl.Set], valid: dict[str, isl.Set], edge_maps: dict[int, isl.UnionMap],
) -> Trace | None:
    """Follow needed-but-impossible points back to a read outside its source's domain."""
    from tempo.schedule.isl_program import stmt_name

    seen: set[int] = set()
    while op.op_id not in seen:
        seen.add(op.op_id)
        for e in sdg.in_edges[op.op_id]:
            direct = _read_outside(sdg, e, decl, context).intersect(where)
            if not direct.is_empty():
                return Trace(e, direct)
        for e in sdg.in_edges[op.op_id]:
            src = stmt_name(e.src.op_id)
            gone = full[src].subtract(valid[src])
            if gone.is_empty():
                continue
            m = edge_maps[id(e)]
            hit = m.intersect_domain(isl.UnionSet.from_set(gone)).range()
            hit = hit.intersect(isl.UnionSet.from_set(where))
            if hit.is_empty():
                continue
            src_pts = m.intersect_range(hit).domain()
            where = isl.Set.from_union_set(src_pts).intersect(gone)
            op = sdg.ops[e.src.op_id]
            break
        else:
            return None
    return None


def outside_error(
    sdg: SDG, op: ops.Op, where: isl.Set, decl: str, context: isl.Set,
    full: dict[str, isl.Set], valid: dict[str, isl.Set], edge_maps: dict[int, isl.UnionMap],
) -> IndexExprError:
    """The error for points of `op` that are needed but cannot be computed."""
    tr = trace_root(sdg, op, where, decl, context, full, valid, edge_maps)
    if tr is None:
        return IndexExprError(f"{naming.op_label(op, sdg.names)} can never be computed: its "
                              "reads are out of bounds", site=op.site)
    e = tr.edge
    reader, src = sdg.ops[e.sink], sdg.ops[e.src.op_id]
    site = e.site or reader.site
    values = _point_values(tr.points)
    found = _side(sdg, e, values)
    read = f"[{naming.index_word(e.expr)}]"
    msg = f"{naming.at_site(site)} reads {naming.op_label(src, sdg.names)} at {read}"
    if found is not None:
        msg += f", but {found.words} {_when(sdg, e, decl, values)}. {_fix(sdg, e, found)}"
        msg += _swapped_dims(src, e, found)
    else:
        msg += f" outside its domain {_when(sdg, e, decl, values)}"
    if op.op_id not in (reader.op_id, src.op_id) and (op.site or op.op_id in sdg.names):
        msg += f" (the value is needed by {naming.op_label(op, sdg.names)})"
    return IndexExprError(msg, site=site)


@dataclass
class Side:
    """How a read leaves its source: `end` ('start' or 'end') of dimension `var`, by the
    index `member`, whose value the user sees as `word`."""

    end: str
    var: Any
    word: str
    last: str
    words: str


def _fix(sdg: SDG, e: Edge, s: Side) -> str:
    """A fix that applies where the read leaves: a base case, a clamp, or a smaller index."""
    reader, src = sdg.ops[e.sink], sdg.ops[e.src.op_id]
    src_name = naming.op_label(src, sdg.names)
    bounds = {v.as_bound().name for v in sdg.universe.variables}
    constant = all(w in bounds for w in re.findall(r"[A-Za-z_]\w*", s.word))  # e.g. `T`, `T + 1`
    if s.end == "start":
        if isinstance(reader, ops.MergeOp) or isinstance(src, ops.MergeOp):
            rec = reader if isinstance(reader, ops.MergeOp) else src
            return (f"{_cap(naming.op_label(rec, sdg.names))} has no value there: define its "
                    f"base case first (e.g. `x[0] = ...` before the recursive definition; the "
                    "first branch whose condition holds wins)")
        if constant:
            return f"Use an index of at least 0 ({src_name} starts at {s.var.name} = 0)"
        return ("Guard the read with a recurrence (a placeholder with a base case, "
                f"`y[0] = ...` then `y[True] = ...`) or clamp it (`ie.max({s.word}, 0)`)")
    if constant:
        return f"Use an index of at most {s.last}"
    return (f"Clamp it (`ie.min({s.word}, {s.last})`) or read it only where it exists "
            f"(e.g. `with ctx.when(...)` around the definition that reads it)")


def _swapped_dims(src: ops.Op, e: Edge, s: Side) -> str:
    """A hint when the index at `s.var`'s position uses another of the source's own dims
    only (`x[t - 1]` on a (b, t) tensor addresses b): positions follow the domain order."""
    dims = list(src.domain.variables)
    pos = [k for k, v in enumerate(dims) if v.name == s.var.name]
    if not pos or pos[0] >= len(e.expr):
        return ""
    used = {v.name for v in e.expr[pos[0]].vars_used()}
    others = {v.name for v in dims} - {s.var.name}
    if not used or s.var.name in used or not used <= others:
        return ""
    order = ", ".join(v.name for v in dims)
    return (f" (index position {pos[0] + 1} addresses {s.var.name}: a read's positions "
            f"follow the domain ({order}), so `{naming.expr_word(e.expr[pos[0]])}` there "
            f"is a point of {s.var.name}, not of {sorted(used)[0]})")


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _point_values(points: isl.Set) -> dict[str, int]:
    """Named coordinates (set dims, then parameters) of one point of `points`."""
    p = points.sample_point()
    space = points.get_space()
    out: dict[str, int] = {}
    for kind in (isl.dim_type.set, isl.dim_type.param):
        for i in range(space.dim(kind)):
            name = space.get_dim_name(kind, i) or f"i{i}"
            out[name] = int(p.get_coordinate_val(kind, i).to_python())
    return out


def _symbols(sdg: SDG) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for v in sdg.universe.variables:
        out[v.name] = v
        out[v.as_bound().name] = v.as_bound()
    return out


def _side(sdg: SDG, e: Edge, values: dict[str, int]) -> Side | None:
    """Which end of which source dimension the read leaves by, at the point `values`."""
    src = sdg.ops[e.src.op_id]
    syms = _symbols(sdg)
    env = {syms[k]: v for k, v in values.items() if k in syms}
    for v, member in zip(src.domain.variables, e.expr):
        bound = src.domain.bound_of(v)
        lo, hi = (member.start, member.stop) if isinstance(member, ie.Slice) else (member, None)
        try:
            lo_v = int(ie.evaluate(lo, env))
            hi_v = int(ie.evaluate(hi, env)) - 1 if hi is not None else lo_v
            ub_v = int(ie.evaluate(bound, env))
        except Exception:  # noqa: BLE001 - wording only; the caller says less
            continue
        last = naming.expr_word(bound - 1)
        if lo_v < 0:
            word = naming.expr_word(lo)
            return Side("start", v, word, last, f"{word} is before the start 0 of {v.name}")
        if hi_v > ub_v - 1:
            word = naming.expr_word(hi - 1 if hi is not None else lo)
            return Side("end", v, word, last, f"{word} is past the end {last} of {v.name}")
    return None


def _when(sdg: SDG, e: Edge, decl: str, values: dict[str, int]) -> str:
    """'when t >= T - 5 (e.g. t = 5 with T = 10)': the symbolic condition if isl gives a
    short one, with one concrete point."""
    reader = sdg.ops[e.sink]
    var_names = [v.name for v in reader.domain.variables]
    params = [k for k in values if k not in var_names]
    concrete = naming.point_word({k: values[k] for k in var_names})
    bounds = naming.point_word({k: values[k] for k in params})
    example = f"{concrete} with {bounds}" if concrete and bounds else (concrete or bounds)
    cond = _symbolic_condition(sdg, e, decl, params)
    if cond == "always":
        return f"at every point (e.g. at {example})"
    if cond:
        return f"when {cond} (e.g. at {example})"
    return f"at {example}"


def _symbolic_condition(sdg: SDG, e: Edge, decl: str, params: list[str]) -> str:
    from tempo.schedule.isl_program import _domain_constraints, _tuple, stmt_name

    reader = sdg.ops[e.sink]
    try:
        positive = " and ".join(f"{p} >= 1" for p in params) or "true"
        generic = isl.Set(f"{decl} -> {{ : {positive} }}")
        bad = _read_outside(sdg, e, decl, generic)
        cons = " and ".join(_domain_constraints(reader.domain)) or "true"
        dom = isl.Set(f"{decl} -> {{ {_tuple(stmt_name(reader.op_id), reader.domain)} : {cons} }}")
        bad = bad.gist(dom.intersect_params(generic))
    except Exception:  # noqa: BLE001 - wording only
        return ""
    return render_set(bad)


def render_set(s: isl.Set) -> str:
    """Constraints of a set as 't >= T - 5 and b = 0' ('' if too complex to read)."""
    pieces = s.get_basic_sets()
    if not pieces or len(pieces) > 2:
        return ""
    out = []
    for bs in pieces:
        terms = []
        for c in bs.get_constraints():
            raw = {k: int(v.to_python()) for k, v in c.get_coefficients_by_name().items()
                   if int(v.to_python()) != 0}
            const = raw.pop(1, 0)  # islpy keys the constant term by 1
            if any(not isinstance(k, str) for k in raw):
                return ""  # a div or an unnamed dim: too complex to read
            coefs = {str(k): v for k, v in raw.items()}
            terms.append(_constraint_word(coefs, const, c.is_equality(), bs))
        if any(t == "" for t in terms):
            return ""
        out.append(" and ".join(terms) if terms else "always")
    return " or ".join(out)


def _constraint_word(coefs: dict[str, int], const: int, eq: bool, bs: isl.BasicSet) -> str:
    space = bs.get_space()
    dims = [space.get_dim_name(isl.dim_type.set, i) for i in range(space.dim(isl.dim_type.set))]
    subject = next((d for d in dims if d in coefs), None) or next(iter(coefs), None)
    if subject is None:
        return ""
    a = coefs.pop(subject)
    if abs(a) != 1:
        return ""
    # a*subject + rest + const (>= or ==) 0  =>  subject (>= or <= or ==) -(rest + const)/a
    rhs = {k: -v * a for k, v in coefs.items()}
    rhs_const = -const * a
    op = "=" if eq else (">=" if a > 0 else "<=")
    return f"{subject} {op} {_linear(rhs, rhs_const)}"


def _linear(coefs: dict[str, int], const: int) -> str:
    parts: list[str] = []
    for name, c in coefs.items():
        term = name if abs(c) == 1 else f"{abs(c)}*{name}"
        parts.append(("- " if c < 0 else "+ ") + term)
    if const or not parts:
        parts.append(("- " if const < 0 else "+ ") + str(abs(const)))
    text = " ".join(parts)
    return text[2:] if text.startswith("+ ") else "-" + text[2:]


def cycle_error(sdg: SDG, cycle: list[int]) -> ScheduleError:
    """The error for ops that each need the other at the same point. Blames the definition
    that closes the loop (a placeholder branch reading a value that reads the placeholder);
    a loop made only by backward() is Tempo's to fix, and says so."""
    if not cycle:  # isl found no order, yet no op waits on itself: ours to fix
        return ScheduleError("Tempo could not find an order for this program's ops although "
                             "none of them needs itself at the same point; this is a bug in "
                             "Tempo's compiler, not in your program: please report it")
    members = set(cycle)
    closing = next((e for i in cycle if isinstance(sdg.ops[i], ops.MergeOp)
                    for e in sdg.in_edges[i] if e.src.op_id in members), None)
    chain = _by_line([sdg.ops[i] for i in cycle]) or "unknown ops"
    if cycle and all(_BACKWARD in sdg.ops[i].tags for i in cycle):
        site = sdg.ops[cycle[0]].site
        return ScheduleError(
            f"the gradient program that {naming.at_site(site)} built cannot be scheduled: its "
            f"ops need each other at the same point ({chain}). This is a limitation of Tempo's "
            "autodiff or scheduler, not a mistake in your program; please report it", site=site)
    if closing is None:
        return ScheduleError(f"these ops each need the other at the same point, so no order can "
                             f"run them: {chain}")
    merge = sdg.ops[closing.sink]
    return ScheduleError(
        f"{naming.at_site(closing.site)} defines {naming.op_label(merge, sdg.names)} by a value "
        "that itself reads it at the same point, so neither can be computed first (ops in the "
        f"loop: {chain}). Read an earlier point instead (e.g. `x[t - 1]`, with a base case)",
        site=closing.site or merge.site)


_BACKWARD = "__BACKWARD_REGION__"  # the region tag of ops that backward() records


def isl_time_error(sdg: SDG, unordered: list[int], spent: float) -> ScheduleTimeError:
    """The error when isl's scheduler, the fallback for a program Tempo's own scheduler
    could not order, ran out of its CPU budget: names the ops the structural scheduler
    gave up on (`Unorderable.ops`), by the user's lines."""
    members = [sdg.ops[i] for i in unordered if i in sdg.ops]
    which = (f"it could not order these ops against each other: {_by_line(members[:12])}"
             + (f" (and {len(members) - 12} more)" if len(members) > 12 else "")
             if members else "it could not verify its own order for this program")
    site = next((op.site for op in members if op.site), None)
    return ScheduleTimeError(
        f"compiling stopped after {spent:.0f} CPU-s in isl's scheduler, the fallback for "
        f"programs Tempo's own scheduler cannot order: {which}. Such ops read each other "
        "at points that need their loops interleaved or skewed (often a recurrence over two "
        "dims read along both). Read values that are complete when the reader runs (an "
        "earlier iteration's instead of the current one's), split the recurrence into one "
        "placeholder per dim, or allow isl more time: `with tempo.core.configs.tuned("
        "isl_schedule_cpu_s=600): ctx.compile(...)` (None: no limit)", site=site)


def _by_line(members: list[ops.Op]) -> str:
    """Ops grouped by the line that made them: 'the placeholder, mul and add made by `...`
    at prog.py:7; the mul `b = a * 2` at prog.py:8'."""
    groups: dict[str, list[str]] = {}
    for op in members:
        kinds = groups.setdefault(op.site, [])
        if naming.kind(op) not in kinds:
            kinds.append(naming.kind(op))
    parts = []
    for site, kinds in groups.items():
        what = kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " and " + kinds[-1]
        made = "made by " if len(kinds) > 1 else ""
        parts.append(f"the {what} {made}{naming.at_site(site)}")
    return "; ".join(parts)


def point_cycle_error(sdg: SDG, merge_id: int, cycle: list[tuple[int, ...]],
                      edge: Any) -> ScheduleError:
    """The error for a placeholder that reads itself around a cycle of other points
    (`point_cycles.point_cycle`): the user's definition closes a loop no order can run."""
    m = sdg.ops[merge_id]
    names = [v.name for v in m.domain.variables]
    words = [naming.point_word(dict(zip(names, p))) for p in cycle]
    shown = words if len(words) <= 5 else [*words[:4], "..."]
    chain = " -> ".join(f"({w})" if w != "..." else w for w in shown) + f" -> ({words[0]})"
    return ScheduleError(
        f"{naming.at_site(edge.site)} defines {naming.op_label(m, sdg.names)} by reading it at "
        f"other points in a cycle: {chain} (each point needs the next one first), so no order "
        "can compute them. A read that wraps around (`x.previous` at the origin, `x.next_` at "
        "the last point) or a missing base case closes such a loop: define the start first "
        "(e.g. `x.init = ...` before `x[True] = x.previous + ...`)", site=edge.site or m.site)
