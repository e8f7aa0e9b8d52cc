"""Temporal programs (index patterns, recurrences forward and backward in time), each
compared with an eager PyTorch loop computing the same maths."""

from __future__ import annotations

import numpy as np
import torch
from programs import close, owned, run

from tempo.api import RecurrentTensor as RT
from tempo.core import index_expr as ie
from tempo.core.dtype import dtypes

T_ = 7
X = np.random.default_rng(0).standard_normal((T_, 3)).astype(np.float32)
XT = torch.from_numpy(X)


def _x_source(t):  # noqa: ANN001, ANN202 - test helper
    return RT.source_with_ts_udf(lambda ts: XT[ts[t]], (3,), dtypes.float32, domain=(t,))


def test_shift_sugar_two_dims(cfg) -> None:
    def build(bB, tT):  # noqa: ANN001, ANN202
        (b, _), (t, _) = bB, tT
        o = RT.placeholder((4,), dtypes.float32, domain=(b, t))
        o[b, 0] = RT.zeros((4,))
        o[b, t + 1] = o + 1.0
        return {"o": o}

    res = run(cfg, 2, build, {0: 2, 1: 5})
    want = torch.arange(5, dtype=torch.float32)[None, :, None].expand(2, 5, 4)
    close(res["o"], want)


def test_previous_point_read(cfg) -> None:
    def build(tT):  # noqa: ANN001, ANN202
        t, _ = tT
        x = _x_source(t)
        y = RT.placeholder((3,), dtypes.float32, domain=(t,))
        y[0] = x[0]
        y[True] = x + x[t - 1]
        return {"y": y}

    want = XT.clone()
    want[1:] = XT[1:] + XT[:-1]
    close(run(cfg, 1, build, {0: T_})["y"], want)


def test_fibonacci_two_step_reads(cfg) -> None:
    def build(tT):  # noqa: ANN001, ANN202
        t, _ = tT
        f = RT.placeholder((), dtypes.int64, domain=(t,))
        f[0] = RT.const(1, dtype=dtypes.int64)
        f[1] = RT.const(1, dtype=dtypes.int64)
        f[True] = f[t - 1] + f[t - 2]
        return {"f": f}

    want = [1, 1]
    for _ in range(8):
        want.append(want[-1] + want[-2])
    close(run(cfg, 1, build, {0: 10})["f"], torch.tensor(want))


def test_growing_slice_prefix_sum(cfg) -> None:
    def build(tT):  # noqa: ANN001, ANN202
        t, _ = tT
        x = _x_source(t)
        return {"y": x[0 : t + 1].sum(0)}

    close(run(cfg, 1, build, {0: T_})["y"], torch.cumsum(XT, 0))


def test_future_read_shrinking_slice(cfg) -> None:
    def build(tT):  # noqa: ANN001, ANN202
        t, T = tT
        x = _x_source(t)
        return {"y": x[t:T].sum(0)}

    want = torch.flip(torch.cumsum(torch.flip(XT, [0]), 0), [0])
    close(run(cfg, 1, build, {0: T_})["y"], want)


def test_window_behind(cfg) -> None:
    w = 3

    def build(tT):  # noqa: ANN001, ANN202
        t, _ = tT
        x = _x_source(t)
        return {"y": x[ie.max(0, t - w + 1) : t + 1].sum(0)}

    want = torch.stack([XT[max(0, k - w + 1) : k + 1].sum(0) for k in range(T_)])
    close(run(cfg, 1, build, {0: T_})["y"], want)


def test_window_ahead(cfg) -> None:
    w = 3

    def build(tT):  # noqa: ANN001, ANN202
        t, T = tT
        x = _x_source(t)
        return {"y": x[t : ie.min(t + w, T)].max(0)[0]}

    want = torch.stack([XT[k : min(k + w, T_)].max(0)[0] for k in range(T_)])
    close(run(cfg, 1, build, {0: T_})["y"], want)


def test_window_ahead_of_a_recurrence_summed_over_time(cfg) -> None:
    """A term reading 3 steps ahead of a recurrence runs in the recurrence's loop, 2 steps
    late (shifted placement); its sum over time is a running sum there (incremental mode)."""
    w = 3

    def build(tT):  # noqa: ANN001, ANN202
        t, T = tT
        x = _x_source(t)
        s = RT.placeholder((3,), dtypes.float32, domain=(t,))
        s[0] = x[0]
        s[True] = s[t - 1] * 0.5 + x
        ahead = (s[t : ie.min(t + w, T)] * 2.0).sum(0)
        return {"ahead": ahead, "total": ahead[0:T].sum(0) * 3.0}

    s = [XT[0]]
    for k in range(1, T_):
        s.append(s[-1] * 0.5 + XT[k])
    st = torch.stack(s)
    want = torch.stack([(st[k : min(k + w, T_)] * 2.0).sum(0) for k in range(T_)])
    res = run(cfg, 1, build, {0: T_})
    close(res["ahead"], want)
    close(res["total"], want.sum(0) * 3.0)


def test_constant_slice_whole_dim(cfg) -> None:
    def build(tT):  # noqa: ANN001, ANN202
        t, T = tT
        x = _x_source(t)
        m = x[0:T].mean(0)
        return {"m": m, "centred": x - m}

    res = run(cfg, 1, build, {0: T_})
    close(res["m"], XT.mean(0))
    close(res["centred"], XT - XT.mean(0))


def test_constant_point_reads(cfg) -> None:
    def build(tT):  # noqa: ANN001, ANN202
        t, T = tT
        x = _x_source(t)
        return {"y": x[0] * 2.0 + x[T - 1] - x[-2]}

    want = (XT[0] * 2 + XT[-1] - XT[-2]).expand(T_, 3)
    close(run(cfg, 1, build, {0: T_})["y"].expand(T_, 3), want)


def test_min_max_point_reads_past_and_future(cfg) -> None:
    def build(tT):  # noqa: ANN001, ANN202
        t, T = tT
        x = _x_source(t)
        return {"y": x[ie.max(t - 1, 0)] + x[ie.min(t + 1, T - 1)]}

    want = torch.stack([XT[max(k - 1, 0)] + XT[min(k + 1, T_ - 1)] for k in range(T_)])
    close(run(cfg, 1, build, {0: T_})["y"], want)


def test_backward_recurrence_discounted_return(cfg) -> None:
    gamma = 0.9

    def build(tT):  # noqa: ANN001, ANN202
        t, T = tT
        r = _x_source(t)
        g = RT.placeholder((3,), dtypes.float32, domain=(t,))
        g[T - 1] = r[T - 1]
        g[True] = r + gamma * g[t + 1]
        return {"g": g}

    want = torch.zeros_like(XT)
    acc = torch.zeros(3)
    for k in reversed(range(T_)):
        acc = XT[k] + gamma * acc
        want[k] = acc
    close(run(cfg, 1, build, {0: T_})["g"], want)


def test_conditions_first_true_branch_wins(cfg) -> None:
    def build(tT):  # noqa: ANN001, ANN202
        t, _ = tT
        x = RT.placeholder((), dtypes.int64, domain=(t,))
        x[t < 2] = RT.const(10, dtype=dtypes.int64)
        x[t % 2 == 0] = RT.const(20, dtype=dtypes.int64)
        x[True] = RT.from_symbol(t).cast(dtypes.int64)  # default_int is int32 on jax/numpy
        return {"x": x}

    want = [10 if k < 2 else 20 if k % 2 == 0 else k for k in range(8)]
    close(run(cfg, 1, build, {0: 8})["x"], torch.tensor(want))


def test_when_context_guards_definitions(cfg) -> None:
    from tempo.api.tempo_context_manager import get_active_ctx_manager

    def build(tT):  # noqa: ANN001, ANN202
        t, _ = tT
        x = RT.placeholder((), dtypes.float32, domain=(t,))
        with get_active_ctx_manager().when(t >= 3):
            x[t % 2 == 1] = RT.const(1.0)
        x[True] = RT.const(0.0)
        return {"x": x}

    want = [1.0 if (k >= 3 and k % 2 == 1) else 0.0 for k in range(7)]
    close(run(cfg, 1, build, {0: 7})["x"], torch.tensor(want))


def test_three_dims_rollout_reset_and_step(cfg) -> None:
    def build(bB, iI, tT):  # noqa: ANN001, ANN202
        (b, _), (i, _), (t, _) = bB, iI, tT
        o = RT.placeholder((2,), dtypes.float32, domain=(b, i, t))
        start = RT.from_symbol(b).cast(dtypes.float32) + RT.from_symbol(i).cast(dtypes.float32)
        o[b, i, 0] = start.expand((2,))
        o[b, i, t + 1] = o * 0.5 + 1.0
        return {"o": o}

    res = run(cfg, 3, build, {0: 2, 1: 3, 2: 4})
    want = torch.zeros(2, 3, 4, 2)
    for bb in range(2):
        for ii in range(3):
            v = torch.full((2,), float(bb + ii))
            for tt in range(4):
                want[bb, ii, tt] = v
                v = v * 0.5 + 1.0
    close(res["o"], want)


def test_rnn_matmul_recurrence(cfg) -> None:
    w = np.random.default_rng(1).standard_normal((3, 3)).astype(np.float32) * 0.5

    def build(tT):  # noqa: ANN001, ANN202
        t, _ = tT
        x = _x_source(t)
        W = RT.const(w)
        h = RT.placeholder((3,), dtypes.float32, domain=(t,))
        h[0] = RT.zeros((3,))
        h[t + 1] = (W @ h + x).tanh()
        return {"h": h}

    want, hh = [], torch.zeros(3)
    for k in range(T_):
        want.append(hh)
        hh = torch.tanh(torch.from_numpy(w) @ hh + XT[k])
    close(run(cfg, 1, build, {0: T_})["h"], torch.stack(want))


def test_nested_recurrences_inner_and_outer(cfg) -> None:
    def build(tT, iI):  # noqa: ANN001, ANN202
        (t, _), (i, I) = tT, iI
        x = RT.placeholder((), dtypes.float32, domain=(t, i))
        x[0, 0] = RT.const(1.0)
        x[t, 0] = x[t - 1, I - 1] + 1.0
        x[t, i + 1] = x * 2.0
        return {"x": x}

    want = torch.zeros(3, 4)
    v = 1.0
    for tt in range(3):
        v = 1.0 if tt == 0 else want[tt - 1, 3].item() + 1.0
        for ii in range(4):
            want[tt, ii] = v
            v *= 2.0
    close(run(cfg, 2, build, {0: 3, 1: 4})["x"], want)


def test_slice_of_a_recurrence_causal_accumulation(cfg) -> None:
    def build(tT):  # noqa: ANN001, ANN202
        t, _ = tT
        x = _x_source(t)
        s = RT.placeholder((3,), dtypes.float32, domain=(t,))
        s[0] = x[0]
        s[True] = s[t - 1] * 0.5 + x
        return {"att": (s[0 : t + 1].softmax(0) * x[0 : t + 1]).sum(0)}

    s, ss = [], None
    for k in range(T_):
        ss = XT[0] if k == 0 else ss * 0.5 + XT[k]
        s.append(ss)
    S = torch.stack(s)
    want = torch.stack([(torch.softmax(S[: k + 1], 0) * XT[: k + 1]).sum(0) for k in range(T_)])
    close(run(cfg, 1, build, {0: T_})["att"], want)


def test_attention_over_a_growing_history_and_a_window(cfg) -> None:
    """softmax(q k^T / 2) v over k[0:t+1] and the window k[max(0,t-2):t+1] (the tiling
    mode runs both over static blocks with an online softmax)."""
    def build(tT):  # noqa: ANN001, ANN202
        t, _ = tT
        x = _x_source(t)
        q, k, v = (x * 0.5).reshape((1, 1, 3)), (x + 1.0).reshape((1, 3)), (x * x).reshape((1, 3))
        outs = {}
        for name, lo in (("causal", 0), ("window", ie.max(0, t - 2))):
            keys, vals = k[lo : t + 1].permute((1, 2, 0)), v[lo : t + 1].permute((1, 0, 2))
            p = ((q @ keys) * 0.5).softmax(-1)  # (1, S): matmuls squeeze unit dims
            outs[name] = p.unsqueeze(-2) @ vals  # (1, 3)
        return outs

    res = run(cfg, 1, build, {0: T_})
    for name, w in (("causal", T_), ("window", 3)):
        want = []
        for k in range(T_):
            lo = max(0, k - w + 1)
            s = (XT[k] * 0.5) @ (XT[lo : k + 1] + 1.0).T * 0.5
            want.append((torch.softmax(s, -1) @ (XT[lo : k + 1] ** 2))[None])
        close(res[name], torch.stack(want))


def test_from_symbol_and_index_expression_operands(cfg) -> None:
    def build(tT):  # noqa: ANN001, ANN202
        t, T = tT
        return {"y": RT.ones((2,)) * t + (T - t)}

    want = torch.stack([torch.ones(2) * k + (6 - k) for k in range(6)])
    close(run(cfg, 1, build, {0: 6})["y"], want)


def test_sink_order_and_symbol_values(cfg) -> None:
    seen: list[tuple[int, int, float]] = []

    def build(bB, tT):  # noqa: ANN001, ANN202
        (b, _), (t, _) = bB, tT
        o = RT.placeholder((), dtypes.float32, domain=(b, t))
        o[b, 0] = RT.from_symbol(b).cast(dtypes.float32)
        o[b, t + 1] = o + 1.0
        o.sink_with_ts_udf(lambda x, ts: seen.append((ts[b], ts[t], float(x))))
        return {"o": o}

    run(cfg, 2, build, {0: 2, 1: 4}, both_stores=False)
    assert sorted(seen) == [(bb, tt, float(bb + tt)) for bb in range(2) for tt in range(4)]
    for bb in range(2):
        ts_order = [tt for b_, tt, _ in seen if b_ == bb]
        assert ts_order == sorted(ts_order), "a recurrence's sink must see time in order"


def test_several_outputs_and_sinks(cfg) -> None:
    got: dict[str, list[torch.Tensor]] = {"a": [], "b": []}

    def build(tT):  # noqa: ANN001, ANN202
        t, T = tT
        x = _x_source(t)
        (x * 2.0)[0:T].sink_udf(lambda v: got["a"].append(owned(v)))
        x.sum().sink_udf(lambda v: got["b"].append(owned(v)))
        return {"x": x}

    run(cfg, 1, build, {0: T_}, both_stores=False)
    close(got["a"][0], XT * 2)
    close(torch.stack(got["b"]), XT.sum(1))


def test_lexicographic_previous_and_next_piecewise_reads(cfg) -> None:
    """`x.previous`/`x.next_` are Piecewise (row-major with wrap-around) reads."""

    def build(bB, tT):  # noqa: ANN001, ANN202
        (b, _), (t, _) = bB, tT
        x = RT.from_symbol(b) * 10 + RT.from_symbol(t)
        return {"prev": x.previous + 0, "next": x.next_ + 0}

    res = run(cfg, 2, build, {0: 2, 1: 3})
    flat = torch.tensor([0, 1, 2, 10, 11, 12])
    close(res["prev"], torch.roll(flat, 1).reshape(2, 3))
    close(res["next"], torch.roll(flat, -1).reshape(2, 3))


def test_block_store_history_reads_are_views_and_correct(cfg) -> None:
    """With the storage pass on, a growing history is read as a view of one block."""
    import dataclasses

    from tempo.api import TempoContext
    from tempo.runtime.stores import BlockStore

    got: list[torch.Tensor] = []
    bcfg = dataclasses.replace(cfg, enable_hybrid_tensorstore=True, enable_inplace_write=True,
                               enable_lazy_slice=True)
    ctx = TempoContext(bcfg, num_dims=1)
    (t, T), = ctx.variables_and_bounds
    with ctx:
        x = _x_source(t)
        k = x * 2.0
        (k[0 : t + 1] * 1.0).sum(0).sink_udf(lambda v: got.append(owned(v)))
    exe = ctx.compile({T: T_})
    exe.execute()
    if bcfg.can_inplace_write():  # jax arrays are immutable: point stores there
        assert isinstance(exe.stores[k.tensor_id], BlockStore)
        assert "read_slice" in exe.generated.source
    close(torch.stack(got), torch.cumsum(XT * 2, 0))


def test_recurrence_over_a_batched_loss(cfg) -> None:
    """A running sum over t of a loss over a batch (rows of x[t] through a matmul, tanh
    and a sum): the (rows, hidden) intermediates are what incrementalisation
    computes in blocks under the harness's incremental mode."""
    xb = torch.from_numpy(np.random.default_rng(5).standard_normal((T_, 6, 3)).astype(np.float32))
    w = np.random.default_rng(6).standard_normal((3, 8)).astype(np.float32)

    def build(tT):  # noqa: ANN001, ANN202
        t, _ = tT
        x = RT.source_with_ts_udf(lambda ts: xb[ts[t]], (6, 3), dtypes.float32, domain=(t,))
        loss = ((x @ RT.const(w)).tanh() + 1.0).sum()
        acc = RT.placeholder((), dtypes.float32, domain=(t,))
        acc[0] = loss[0]
        acc[True] = acc[t - 1] + loss
        return {"acc": acc}

    per_t = ((xb @ torch.from_numpy(w)).tanh() + 1.0).sum((1, 2))
    close(run(cfg, 1, build, {0: T_})["acc"], torch.cumsum(per_t, 0), atol=1e-4)
