"""Vectorisation routes a read of a producer that keeps its loop through a layout op (a
permute moving the batched dim in place). Two reads of one value by one op, as tanh's
gradient `g * (1 - y*y)` makes, used to get two equal permutes each; the clean-up's dedup
runs before vectorisation and never saw them, so every such program paid for both (the
E5 tanh_backward region fold only hid it inside its region). The rewrite now makes one
adapter per distinct read."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.nn.linear import Linear
from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from programs import all_passes  # noqa: E402

B_, T_, K, H = 3, 4, 5, 6
RNG = np.random.default_rng(3)
X0 = RNG.standard_normal((B_, 1, K)).astype(np.float32)
W1, B1 = (RNG.standard_normal((H, K)).astype(np.float32) * 0.5,
          RNG.standard_normal(H).astype(np.float32))
W2, B2 = (RNG.standard_normal((K, H)).astype(np.float32) * 0.5,
          RNG.standard_normal(K).astype(np.float32))


def _const(v: np.ndarray) -> Any:
    return lambda shape, dtype, domain: RT.const(v)


def _tempo() -> tuple[dict[str, np.ndarray], Any]:
    """A two-layer tanh MLP stepping a state over t (the loop over t stays: the next input
    is the output), batched over b, its mean of y*y over (b, t) differentiated."""
    cfg = dataclasses.replace(all_passes(ExecutionConfig.test_cfg()), backend="torch",
                              enable_dataflow_grouping=False)  # (regions would hide ops)
    ctx = TempoContext(cfg, num_dims=2)
    (b, B), (t, T) = ctx.variables_and_bounds
    got: dict[str, np.ndarray] = {}
    with ctx:
        l1 = Linear(K, H, w_init_fun=_const(W1), b_init_fun=_const(B1))
        l2 = Linear(H, K, w_init_fun=_const(W2), b_init_fun=_const(B2))
        o = RT.placeholder((1, K), dtypes.float32, domain=(b, t))
        o[b, 0] = RT.source_with_ts_udf(lambda ts: X0[ts[b]], (1, K), dtypes.float32,
                                        domain=(b,))
        y = l2(l1(o).tanh()).tanh()
        o[b, t + 1] = o[b, t] * 0.5 + y.detach()
        (y * y).sum()[0:B, 0:T].mean().backward()
        for name, p in (("w1", l1.w), ("b1", l1.b), ("w2", l2.w)):
            p.grad.sink_udf(lambda v, name=name: got.__setitem__(name, np.asarray(v).copy()))
    exe = ctx.compile({B: B_, T: T_})
    exe.execute()
    return got, exe.sdg


def _reference() -> dict[str, np.ndarray]:
    w1, b1, w2 = (torch.tensor(v, requires_grad=True) for v in (W1, B1, W2))
    o, ys = torch.from_numpy(X0), []
    for _ in range(T_):
        y = torch.tanh(torch.tanh(o @ w1.T + b1) @ w2.T + torch.from_numpy(B2))
        ys.append(y)
        o = o * 0.5 + y.detach()
    torch.stack([(y * y).sum((1, 2)) for y in ys]).mean().backward()
    return {"w1": w1.grad.numpy(), "b1": b1.grad.numpy(), "w2": w2.grad.numpy()}


def test_one_permute_of_each_tanh_output_and_torch_autograd_gradients() -> None:
    got, sdg = _tempo()
    want = _reference()
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=2e-5, atol=2e-6, err_msg=k)
    of_tanh: dict[int, list[ops.PermuteOp]] = {}
    for op in sdg.ops.values():
        if isinstance(op, ops.PermuteOp):
            (e,) = sdg.in_edges[op.op_id]
            src = sdg.ops[e.src.op_id]
            if isinstance(src, ops.UnaryOp) and src.fn == "tanh":
                of_tanh.setdefault(src.op_id, []).append(op)
    assert len(of_tanh) == 2, of_tanh  # the two layers' y, each read stacked over t
    assert all(len(ps) == 1 for ps in of_tanh.values()), of_tanh  # (3 and 3 before)
