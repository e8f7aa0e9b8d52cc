"""Generated code keeps in one local what needs no store (codegen_locals): a value made
once per iteration and read and freed later in that iteration (a layer stack's input,
made by a merge whose frees sit in different ifs), and, untracked, a block-stored
recurrence read one iteration later (`x[t-1]`). Results equal eager torch and numpy, on
tracked and untracked runs."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core import ops
from tempo.core.dtype import dtypes

D, T, L = 8, 5, 3


def _cfg(cfg, backend: str, tracked: bool):  # noqa: ANN001, ANN202
    return dataclasses.replace(cfg, backend=backend, enable_gc=True,
                               enable_custom_thunk_launchers=True, executor_debug_mode=False,
                               device_memory_cap_bytes=(1 << 30) if tracked else None)


def _writes_store(src: str, op_id: int) -> bool:
    return re.search(rf"\bs{op_id}_0\[.*\] = ", src) is not None


@pytest.mark.parametrize("tracked", [False, True])
@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_a_layer_stacks_input_is_one_local(cfg, backend: str, tracked: bool) -> None:
    """s[0] = x0, xi[t, 0] = s[t], xi[t, l+1] = f(xi[t, l]), s[t+1] = xo[t, L-1]: xi is
    made and consumed within one (t, l) iteration and lives in a local."""
    w = np.random.default_rng(0).standard_normal((L, D, D)).astype(np.float32) * 0.3
    x0 = np.random.default_rng(1).standard_normal((D,)).astype(np.float32)
    ctx = TempoContext(_cfg(cfg, backend, tracked), num_dims=2)
    (t, TT), (lv, LL) = ctx.variables_and_bounds
    got: list[np.ndarray] = []
    wt = torch.from_numpy(w)
    with ctx:
        wl = RT.source_with_ts_udf(lambda ts: wt[ts[lv]], (D, D), dtypes.float32,
                                   domain=(lv,))
        s = RT.placeholder((D,), dtypes.float32, domain=(t,))
        xi = RT.placeholder((D,), dtypes.float32, domain=(t, lv))
        xi[t, 0] = s
        xo = (xi @ wl).tanh() + xi
        xi[t, lv + 1] = xo
        s[0] = RT.lift(x0)
        s[t + 1] = xo[t, LL - 1]
        s.sink_udf(lambda v: got.append(np.asarray(v).copy()))
    exe = ctx.compile({TT: T, LL: L})
    exe.execute()
    want, x = [], x0
    for _ in range(T):
        want.append(x)
        for k in range(L):
            x = np.tanh(x @ w[k]) + x
    np.testing.assert_allclose(np.stack(got), np.stack(want), rtol=1e-5, atol=1e-5)
    merges = [op.op_id for op in exe.sdg.ops.values()
              if isinstance(op, ops.MergeOp) and len(op.domain.variables) == 2]
    assert merges and not any(_writes_store(exe.generated.source, m) for m in merges)
    if tracked:
        assert exe.memory_stats()["live_bytes"] == 0


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_a_block_stored_recurrence_is_read_back_from_its_local(cfg, backend: str) -> None:
    """x[0] = a, x[t+1] = 0.5 x[t] + u[t] is read whole after the loop (a block store)
    and at t-1 inside it: untracked, the step reads last iteration's local; the sums of
    every prefix equal numpy. A backward recurrence (returns) does the same."""
    u = np.random.default_rng(2).standard_normal((T, D)).astype(np.float32)
    ut = torch.from_numpy(u)
    cfg = dataclasses.replace(_cfg(cfg, backend, tracked=False), inc_statify_block_size=4,
                              enable_hybrid_tensorstore=True, enable_inplace_write=True,
                              enable_lazy_slice=True)
    ctx = TempoContext(cfg, num_dims=1)
    (t, TT), = ctx.variables_and_bounds
    fwd: list[np.ndarray] = []
    bwd: list[np.ndarray] = []
    with ctx:
        src = RT.source_with_ts_udf(lambda ts: ut[ts[t]], (D,), dtypes.float32, domain=(t,))
        x = RT.placeholder((D,), dtypes.float32, domain=(t,))
        x[0] = src[0]
        x[t + 1] = x[t] * 0.5 + src[t + 1]
        x[0:TT].sum(0).sink_udf(lambda v: fwd.append(np.asarray(v).copy()))
        r = RT.placeholder((D,), dtypes.float32, domain=(t,))
        r[TT - 1] = src[TT - 1]
        r[True] = src + r[t + 1] * 0.9
        r[0:TT].sum(0).sink_udf(lambda v: bwd.append(np.asarray(v).copy()))
    exe = ctx.compile({TT: T})
    src_code = exe.generated.source
    blocked = set(re.findall(r"\bps(\d+)_0\[", src_code))
    assert len(blocked) == 2  # x and r, written to deferred block stores
    # no point of them is read from its store: the step reads the local it wrote
    assert not any(re.search(rf"\bs{b}_0\[\(", src_code) for b in blocked)
    exe.execute()
    xs, rs = [u[0]], [u[T - 1]]
    for k in range(1, T):
        xs.append(xs[-1] * 0.5 + u[k])
        rs.insert(0, u[T - 1 - k] + rs[0] * 0.9)
    np.testing.assert_allclose(fwd[-1], np.sum(xs, 0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bwd[-1], np.sum(rs, 0), rtol=1e-5, atol=1e-5)
    exe.reset()
    exe.execute()  # a second run starts from the first point again
    np.testing.assert_allclose(fwd[-1], np.sum(xs, 0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("tracked", [False, True])
@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_a_recurrence_an_outer_loop_carries_is_one_local(cfg, backend: str,  # noqa: ANN001
                                                         tracked: bool) -> None:
    """m[0] = g[0], m[i] = 0.9 m[i-1] + g[i] (the Adam state pattern), read at i by a sink
    and at i-1 by its own step, over (i, t) with a t loop inside: untracked, m lives in
    one local across the i loop (no store); tracked, in its store. Equal to numpy."""
    I_, T_ = 4, 3
    data = np.random.default_rng(5).standard_normal((I_, T_, D)).astype(np.float32)
    ctx = TempoContext(_cfg(cfg, backend, tracked), num_dims=2)
    (i, II), (t, TT) = ctx.variables_and_bounds
    got: list[np.ndarray] = []
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: data[ts[i], ts[t]], (D,), dtypes.float32,
                                  domain=(i, t))
        g = x[i, 0:TT].sum(0)
        m = RT.placeholder((D,), dtypes.float32, domain=(i,))
        m[0] = g
        m[True] = m[i - 1] * 0.9 + g
        m.sink_udf(lambda v: got.append(np.asarray(v).copy()))
    exe = ctx.compile({II: I_, TT: T_})
    exe.execute()
    want, acc = [], np.zeros(D, np.float32)
    for a in range(I_):
        acc = data[a].sum(0) if a == 0 else acc * 0.9 + data[a].sum(0)
        want.append(acc)
    np.testing.assert_allclose(np.stack(got), np.stack(want), rtol=1e-5, atol=1e-5)
    merges = [op.op_id for op in exe.sdg.ops.values() if isinstance(op, ops.MergeOp)]
    assert merges
    src = exe.generated.source
    assert any(_writes_store(src, mg) for mg in merges) == tracked, src
