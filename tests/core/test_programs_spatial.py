"""Spatial semantics inside programs (broadcasting, dtype promotion, shape ops, reductions,
matmul), garbage collection on, and executor reads — each against eager PyTorch."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from programs import close, owned, run

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.dtype import dtypes

A = np.random.default_rng(2).standard_normal((3, 1)).astype(np.float32)
B = np.random.default_rng(3).standard_normal((4,)).astype(np.float32)
M = np.random.default_rng(4).standard_normal((2, 3, 4)).astype(np.float32)


def test_static_program_broadcast_and_promotion(cfg) -> None:
    def build():  # noqa: ANN202
        a, b = RT.const(A), RT.const(B)
        i = RT.const(np.arange(4, dtype=np.int64))
        return {"ab": a * b + 1, "ib": i + b, "cmp": i > 1, "idiv": i / 2, "ifl": i // 3}

    res = run(cfg, 0, build, {})
    ta, tb, ti = torch.from_numpy(A), torch.from_numpy(B), torch.arange(4)
    close(res["ab"], ta * tb + 1)
    close(res["ib"], ti + tb)
    close(res["cmp"], ti > 1)
    close(res["idiv"], ti / 2)
    close(res["ifl"], ti // 3)


def test_shape_ops(cfg) -> None:
    def build():  # noqa: ANN202
        m = RT.const(M)
        return {
            "reshape": m.reshape((6, 4)),
            "reshape_neg": m.reshape((-1, 2)),
            "permute": m.permute((2, 0, 1)),
            "unsqueeze": m.unsqueeze(-1),
            "squeeze": m.unsqueeze(1).squeeze(1),
            "expand": RT.const(A).expand((2, 3, 5)),
            "cat": RT.cat(m, m * 2, dim=1),
            "stack": RT.stack([m, m + 1], dim=-1),
            "where": (m > 0).where(m, -m),
            "ident": m.ident(),
            "transpose": m.transpose(0, 2),
            "flatten": m.flatten(1),
        }

    res = run(cfg, 0, build, {})
    tm = torch.from_numpy(M)
    close(res["reshape"], tm.reshape(6, 4))
    close(res["reshape_neg"], tm.reshape(-1, 2))
    close(res["permute"], tm.permute(2, 0, 1))
    close(res["unsqueeze"], tm.unsqueeze(-1))
    close(res["squeeze"], tm)
    close(res["expand"], torch.from_numpy(A).expand(2, 3, 5))
    close(res["cat"], torch.cat([tm, tm * 2], 1))
    close(res["stack"], torch.stack([tm, tm + 1], -1))
    close(res["where"], torch.where(tm > 0, tm, -tm))
    close(res["ident"], tm)
    close(res["transpose"], tm.transpose(0, 2))
    close(res["flatten"], tm.flatten(1))


def test_reductions(cfg) -> None:
    def build():  # noqa: ANN202
        m = RT.const(M)
        vals, idx = m.max(1)
        return {
            "sum": m.sum(), "sum1": m.sum(1), "sumk": m.sum((0, 2), keepdim=True),
            "mean": m.mean(-1), "max": vals, "argmax": idx, "maxall": m.max(),
            "softmax": m.softmax(-1), "cumsum": m.cumsum(1), "lse": m.logsumexp(2),
        }

    res = run(cfg, 0, build, {})
    tm = torch.from_numpy(M)
    close(res["sum"], tm.sum())
    close(res["sum1"], tm.sum(1))
    close(res["sumk"], tm.sum((0, 2), keepdim=True))
    close(res["mean"], tm.mean(-1))
    close(res["max"], tm.max(1)[0])
    close(res["argmax"], tm.max(1)[1])
    close(res["maxall"], tm.max())
    close(res["softmax"], torch.softmax(tm, -1))
    close(res["cumsum"], torch.cumsum(tm, 1))
    close(res["lse"], torch.logsumexp(tm, 2))


def test_matmul_shapes_and_squeeze_quirk(cfg) -> None:
    w = np.random.default_rng(5).standard_normal((4, 5)).astype(np.float32)
    v = np.random.default_rng(6).standard_normal((4,)).astype(np.float32)

    def build():  # noqa: ANN202
        m, W, V = RT.const(M), RT.const(w), RT.const(v)
        row = RT.const(np.ones((1, 4), np.float32))
        return {"bmm": m @ W, "mv": m @ V, "vv": V @ V, "row": row @ W}

    res = run(cfg, 0, build, {})
    tm, tw, tv = torch.from_numpy(M), torch.from_numpy(w), torch.from_numpy(v)
    close(res["bmm"], tm @ tw, atol=1e-4)
    close(res["mv"], tm @ tv, atol=1e-4)
    close(res["vv"], tv @ tv, atol=1e-4)
    close(res["row"], (torch.ones(1, 4) @ tw).squeeze(0), atol=1e-4)  # API §3.8 quirk


def test_parameter_broadcast_over_domain(cfg) -> None:
    w = np.random.default_rng(7).standard_normal((3,)).astype(np.float32)

    def build(bB, tT):  # noqa: ANN001, ANN202
        (b, _), (t, _) = bB, tT
        W = RT.const(w)
        x = RT.from_symbol(b).cast(dtypes.float32) * 10 + RT.from_symbol(t).cast(dtypes.float32)
        return {"y": W * x}

    res = run(cfg, 2, build, {0: 2, 1: 3})
    bt = torch.arange(2)[:, None] * 10.0 + torch.arange(3)[None, :]
    close(res["y"], torch.from_numpy(w) * bt[..., None])


def test_gc_on_frees_and_results_match(cfg) -> None:
    """With garbage collection the schedule frees each point after its last reader."""
    got: list[torch.Tensor] = []
    gc_cfg = dataclasses.replace(cfg, enable_gc=True)
    ctx = TempoContext(gc_cfg, num_dims=1)
    (t, T), = ctx.variables_and_bounds
    with ctx:
        x = RT.from_symbol(t).cast(dtypes.float32)
        s = RT.placeholder((), dtypes.float32, domain=(t,))
        s[0] = x
        s[True] = s[t - 1] + x
        (s * 2.0)[0:T].sink_udf(lambda v: got.append(owned(v)))
    exe = ctx.compile({T: 6})
    exe.execute()
    close(got[0], torch.cumsum(torch.arange(6.0), 0) * 2)
    assert "free" in exe.schedule_text()
    assert exe.memory_stats()["live_bytes"] == 0, "every stored point must have been freed"


def test_executor_reads_points_and_slices(cfg) -> None:
    ctx = TempoContext(cfg, num_dims=2)
    (b, B), (t, T) = ctx.variables_and_bounds
    with ctx:
        y = RT.from_symbol(b) * 100 + RT.from_symbol(t)
    exe = ctx.compile({B: 2, T: 3})
    exe.execute()
    assert int(exe.get_spatial_tensor_torch(y.tensor_id, (1, 2))) == 102
    close(exe.get_spatial_tensor_torch(y.tensor_id, (slice(0, 2), 1)), torch.tensor([1, 101]))
    assert exe.get_spatial_tensor_torch(y.tensor_id, (slice(0, 2), slice(0, 3))).shape == (2, 3)
    exe.reset()
    exe.execute()
    assert int(exe.get_spatial_tensor_torch(y.tensor_id, (0, 1))) == 1


def test_source_udf_and_map_udf(cfg) -> None:
    data = torch.arange(12, dtype=torch.float32).reshape(4, 3)

    def build(tT):  # noqa: ANN001, ANN202
        t, _ = tT
        x = RT.source_with_ts_udf(lambda ts: data[ts[t]], (3,), dtypes.float32, domain=(t,))
        return {"y": x.map_udf(lambda v: v * v + 1)}

    close(run(cfg, 1, build, {0: 4})["y"], data * data + 1)


def test_domain_broadcast_definition_value(cfg) -> None:
    """A value over a smaller domain is broadcast over the placeholder's missing dims."""

    def build(bB, tT):  # noqa: ANN001, ANN202
        (b, _), (t, _) = bB, tT
        o = RT.placeholder((), dtypes.float32, domain=(b, t))
        o[True] = RT.from_symbol(t).cast(dtypes.float32)
        return {"o": o}

    close(run(cfg, 2, build, {0: 3, 1: 4})["o"], torch.arange(4.0).expand(3, 4))


def test_tick_runs_one_outer_step_at_a_time(cfg) -> None:
    seen: list[int] = []
    ctx = TempoContext(cfg, num_dims=1)
    (t, T), = ctx.variables_and_bounds
    with ctx:
        RT.from_symbol(t).sink_udf(lambda v: seen.append(int(v)))
    exe = ctx.compile({T: 4})
    assert exe.tick() and seen == [0]
    assert exe.tick() and seen == [0, 1]
    while exe.tick():
        pass
    assert seen == [0, 1, 2, 3]


def test_memory_cap_raises_naming_the_tensor(cfg) -> None:
    from tempo.core.errors import TempoMemoryError

    # fusion would keep the product inside one region with its sum (never stored, so
    # never counted against the cap, which is on stored values)
    capped = dataclasses.replace(cfg, device_memory_cap_bytes=4 * 1000,
                                 enable_dataflow_grouping=False)
    ctx = TempoContext(capped, num_dims=1)
    (t, T), = ctx.variables_and_bounds
    with ctx:
        big = RT.ones((300,)) * RT.from_symbol(t).cast(dtypes.float32)
        big[0:T].sum().sink_udf(lambda v: None)
    exe = ctx.compile({T: 10})
    try:
        exe.execute()
    except TempoMemoryError as exc:
        assert "mul" in str(exc) and "cap" in str(exc)
    else:
        raise AssertionError("10 points of 1200 B must pass a 4000 B cap")
    ok = TempoContext(dataclasses.replace(capped, device_memory_cap_bytes=10**6), num_dims=1)
    (t2, T2), = ok.variables_and_bounds
    with ok:
        x = RT.ones((300,)) * RT.from_symbol(t2).cast(dtypes.float32)
        x[0:T2].sum().sink_udf(lambda v: None)
    exe2 = ok.compile({T2: 3})
    exe2.execute()
    stats = exe2.memory_stats()
    assert stats["peak_bytes"] is not None and stats["peak_bytes"] >= 3 * 1200
    assert stats["swapped_bytes"] == 0
    timeline = exe2.memory_timeline()
    assert timeline and all(live <= stats["peak_bytes"] for live, _host in timeline)


def test_dedup_removes_a_duplicated_forward_pass(cfg) -> None:
    """The same computation recorded twice (acting, then learning) runs once."""
    w = np.random.default_rng(8).standard_normal((3, 3)).astype(np.float32)
    opt = dataclasses.replace(cfg, enable_duplicate_code_elim=True)
    outs = []
    ctx = TempoContext(opt, num_dims=1)
    (t, T), = ctx.variables_and_bounds
    with ctx:
        W = RT.const(w)
        x = RT.from_symbol(t).cast(dtypes.float32).expand((3,))
        act = (W @ x).tanh()
        learn = (W @ x).tanh()
        (act + learn).sink_udf(lambda v: outs.append(owned(v)))
    exe = ctx.compile({T: 3})
    exe.execute()
    names = [type(m).__name__ for op in exe.sdg.ops.values()  # fused regions' members too
             for m in getattr(op, "body", (op,))]
    assert names.count("MatMulOp") == 1 and names.count("UnaryOp") == 1
    want = [2 * torch.tanh(torch.from_numpy(w) @ torch.full((3,), float(k))) for k in range(3)]
    close(torch.stack(outs), torch.stack(want))
