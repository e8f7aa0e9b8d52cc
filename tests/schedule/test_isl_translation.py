"""SDG → isl translation: statement domains, exact dependence maps (conditions and slices
included), and free statements ordered after the last reader."""

from __future__ import annotations

import islpy as isl

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.dtype import dtypes
from tempo.schedule.isl_program import build_program, edge_relation_str, stmt_name
from tempo.schedule.tree import Free, walk


def _program(cfg):  # noqa: ANN001, ANN202
    ctx = TempoContext(cfg, num_dims=1)
    (t, T), = ctx.variables_and_bounds
    with ctx:
        x = RT.from_symbol(t).cast(dtypes.float32)
        s = RT.placeholder((), dtypes.float32, domain=(t,))
        s[0] = x
        s[True] = s[t - 1] + x
        y = x[t:T].sum(0)
    return ctx, x, s, y, T


def test_domains_and_dependences_are_exact(cfg) -> None:
    from tempo.compiler.passes import commit_recurrences

    ctx, x, s, y, T = _program(cfg)
    sdg = commit_recurrences.run(ctx.sdg.copy(), cfg)
    prog = build_program(sdg, {T: 5}, [])
    sx, sy = (stmt_name(r.tensor_id.op_id) for r in (x, y))
    assert sum(len(m) for m in prog.groups.values()) == len(sdg.ops)
    rep = {m: r for r, ms in prog.groups.items() for m in ms}
    assert prog.stmt_domains[stmt_name(rep[x.tensor_id.op_id])].count_val().to_python() == 5
    # y[t] reads x[t:T]: exactly the pairs p >= t (the edge relation, before grouping).
    (e,) = [e for e in sdg.in_edges[y.tensor_id.op_id] if e.src.op_id != y.tensor_id.op_id]
    dep = isl.Map(edge_relation_str(sdg, e, "[T]")).intersect_params(prog.context)
    want = isl.Map(f"[T] -> {{ {sx}[p] -> S{e.sink}[t] : T = 5 and 0 <= t <= p < 5 }}")
    assert e.src == x.tensor_id and dep.is_equal(want)
    # The recurrence's second branch holds only where t != 0 (first true branch wins).
    adds = [e for e in sdg.in_edges[s.tensor_id.op_id] if e.src.op_id != x.tensor_id.op_id]
    assert len(adds) == 1
    cond_set = isl.Set(f"[T] -> {{ [t] : 0 <= t < 5 and ({adds[0].cond.to_isl()}) }}")
    assert cond_set.is_equal(isl.Set("[T] -> { [t] : 1 <= t < 5 }"))


def test_frees_follow_last_reader(cfg) -> None:
    """A free before a reader would make the generated code fail with a missing point; with
    GC on, the future-read program runs, gives the right values and ends with no live
    bytes, and each tensor's points are freed inside the schedule, not at the end."""
    import dataclasses

    import torch

    gc_cfg = dataclasses.replace(cfg, enable_gc=True)
    ctx = TempoContext(gc_cfg, num_dims=1)
    (t, T), = ctx.variables_and_bounds
    got: list[float] = []
    with ctx:
        x = RT.from_symbol(t).cast(dtypes.float32)
        y = x[t:T].sum(0) + x[0 : t + 1].sum(0)
        y.sink_udf(lambda v: got.append(float(v)))
    exe = ctx.compile({T: 6})
    exe.execute()
    want = [sum(range(k, 6)) + sum(range(k + 1)) for k in range(6)]
    assert got == want
    assert exe.memory_stats()["live_bytes"] == 0
    frees = [n for n in walk(exe.schedule.tree) if isinstance(n, Free)]
    assert {f.tensor for f in frees} >= {x.tensor_id, y.tensor_id}
    assert torch.tensor(got).shape == (6,)
