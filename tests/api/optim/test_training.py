"""Issue 4's acceptance: a two-layer MLP regression and a small GRU (BPTT over a symbolic
time dim `t` inside each training iteration `i`) trained for 50 iterations with every
optimiser track torch.optim step by step (per-iteration loss and final parameters)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.nn import Linear
from tempo.api.nn.init import const_init
from tempo.api.nn.rnn import GRUCell
from tempo.api.optim.optim import LAMB, SGD, Adam, AdamW, Optimizer
from tempo.core.configs import ExecutionConfig

N = 50  # training iterations
B, D_IN, HID, D_OUT = 16, 4, 8, 2  # batch and widths (outputs >= 2: matmul squeeze quirk)
T = 5  # RNN sequence length
CLIP = 0.05  # small enough that clipping is active on most steps


class TorchLAMB(torch.optim.Optimizer):
    """A reference LAMB (torch.optim has none): bias-corrected Adam step plus weight decay,
    scaled per tensor by the trust ratio ||w|| / ||r|| (1 when either norm is 0)."""

    def __init__(self, params: Iterable[torch.Tensor], lr: float, b1: float = 0.9,
                 b2: float = 0.999, eps: float = 1e-6, wd: float = 0.0) -> None:
        super().__init__(params, {"lr": lr, "b1": b1, "b2": b2, "eps": eps, "wd": wd})

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:  # noqa: ARG002
        for grp in self.param_groups:
            lr, b1, b2, eps, wd = (grp[k] for k in ("lr", "b1", "b2", "eps", "wd"))
            for p in grp["params"]:
                st = self.state[p]
                if not st:
                    st["k"], st["m"], st["v"] = 0, torch.zeros_like(p), torch.zeros_like(p)
                st["k"] += 1
                k, g = st["k"], p.grad
                st["m"].mul_(b1).add_(g, alpha=1 - b1)
                st["v"].mul_(b2).add_(g * g, alpha=1 - b2)
                r = (st["m"] / (1 - b1**k)) / (st["v"].sqrt() / (1 - b2**k) ** 0.5 + eps)
                r = r + wd * p
                wn, rn = p.norm(), r.norm()
                trust = wn / rn if (wn > 0 and rn > 0) else torch.tensor(1.0)
                p.sub_(lr * trust * r)


OptFactory = Callable[[list], Any]
CASES: dict[str, tuple[OptFactory, OptFactory, bool]] = {
    # name: (tempo optimiser, torch optimiser, clip grads to CLIP)
    "sgd": (lambda ps: SGD(ps, lr=0.1), lambda ps: torch.optim.SGD(ps, lr=0.1), False),
    "sgd_momentum_wd": (
        lambda ps: SGD(ps, lr=0.05, momentum=0.9, weight_decay=0.01),
        lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=0.01),
        False,
    ),
    "sgd_nesterov": (
        lambda ps: SGD(ps, lr=0.05, momentum=0.8, nesterov=True),
        lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.8, nesterov=True),
        False,
    ),
    "adam": (lambda ps: Adam(ps, lr=0.01), lambda ps: torch.optim.Adam(ps, lr=0.01), False),
    "adamw": (
        lambda ps: AdamW(ps, lr=0.01, wd=0.1),
        lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1),
        False,
    ),
    "lamb": (lambda ps: LAMB(ps, lr=0.01, wd=0.01), lambda ps: TorchLAMB(ps, 0.01, wd=0.01),
             False),
    "sgd_clipped": (
        lambda ps: SGD(ps, lr=0.1, momentum=0.5, max_norm=CLIP),
        lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.5),
        True,
    ),
    "adam_clipped": (
        lambda ps: Adam(ps, lr=0.01, max_norm=CLIP),
        lambda ps: torch.optim.Adam(ps, lr=0.01),
        True,
    ),
}


def _data(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _linear(tl: torch.nn.Linear, i: Any) -> Linear:
    """A tempo Linear updated along `i`, starting from `tl`'s weights."""
    return Linear(tl.in_features, tl.out_features, domain=(i,),
                  w_init_fun=const_init(tl.weight), b_init_fun=const_init(tl.bias))


def _in_order(*ts: torch.Tensor) -> Any:
    """An InitFn returning `ts` one after the other (for modules with several layers)."""
    queue = list(ts)

    def fn(*, shape: Any, dtype: Any = None, domain: Any = None) -> RT:
        return const_init(queue.pop(0))(shape=shape, dtype=dtype, domain=domain)

    return fn


def _torch_train(params: list[torch.Tensor], make: OptFactory, clip: bool,
                 loss_fn: Callable[[], torch.Tensor]) -> tuple[list[float], list[torch.Tensor]]:
    """Losses of iterations 0..N-1 and the parameters used by iteration N-1."""
    opt, losses = make(params), []
    for k in range(N):
        if k == N - 1:
            final = [p.detach().clone() for p in params]
        opt.zero_grad()
        lt = loss_fn()
        losses.append(lt.item())
        lt.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(params, CLIP)
        opt.step()
    return losses, final


def _check(exe: Any, loss: RT, params: list[RT], ref_losses: list[float],
           ref_params: list[torch.Tensor]) -> None:
    got = exe.get_spatial_tensor_torch(loss.tensor_id, (slice(0, N),)).numpy()
    np.testing.assert_allclose(got, np.array(ref_losses), rtol=1e-4, atol=1e-6)
    for p, ref in zip(params, ref_params):
        final = exe.get_spatial_tensor_torch(p.tensor_id, (N - 1,))
        np.testing.assert_allclose(final.numpy(), ref.numpy(), rtol=1e-4, atol=1e-5)
    assert ref_losses[-1] < ref_losses[0]  # training makes progress


def mlp_program(make: OptFactory, cfg: ExecutionConfig | None = None) -> tuple[Any, ...]:
    """Records `Linear -> tanh -> Linear`, MSE, backward and `make(params).step()` over
    iterations `i`; returns (ctx, I, loss, params, torch layers, X, Y)."""
    torch.manual_seed(0)
    X, Y = _data(1, B, D_IN), _data(2, B, D_OUT)
    tls = [torch.nn.Linear(D_IN, HID), torch.nn.Linear(HID, D_OUT)]
    ctx = TempoContext(cfg or ExecutionConfig.test_cfg(), num_dims=1)
    ((i, I),) = ctx.variables_and_bounds
    with ctx:
        l1, l2 = _linear(tls[0], i), _linear(tls[1], i)
        pred = l2(l1(RT.const(X.numpy())).tanh())
        loss = ((pred - RT.const(Y.numpy())) ** 2).mean()
        loss.backward()
        params = l1.parameters + l2.parameters
        opt = make(params)
        assert isinstance(opt, Optimizer)
        opt.step()
    return ctx, I, loss, params, tls, X, Y


def rnn_program(make: OptFactory, cell_kind: str = "tanh",
                cfg: ExecutionConfig | None = None) -> tuple[Any, ...]:
    """An RNN cell (`torch.nn.RNNCell`-style tanh, or `GRUCell`) unrolled over `t` inside
    each iteration `i` (a 2-d program), a Linear readout per step, loss = mean over t of
    the per-step MSE; BPTT then `step()`. Returns (ctx, I, T, loss, params, torch refs)."""
    torch.manual_seed(0)
    xs, ys, h0 = _data(3, T, B, D_IN), _data(4, T, B, D_OUT), _data(5, B, HID)
    tcell = (torch.nn.GRUCell if cell_kind == "gru" else torch.nn.RNNCell)(D_IN, HID)
    tout = torch.nn.Linear(HID, D_OUT)
    ctx = TempoContext(cfg or ExecutionConfig.test_cfg(), num_dims=2)
    (i, I), (t, T_) = ctx.variables_and_bounds
    with ctx:
        if cell_kind == "gru":
            gru = GRUCell(D_IN, HID, domain=(i,),  # ih is built before hh
                          w_init_fun=_in_order(tcell.weight_ih, tcell.weight_hh),
                          b_init_fun=_in_order(tcell.bias_ih, tcell.bias_hh))
            cell_params = gru.parameters
            cell: Callable[[Any, Any], RT] = gru
        else:
            ih = Linear(D_IN, HID, domain=(i,), w_init_fun=const_init(tcell.weight_ih),
                        b_init_fun=const_init(tcell.bias_ih))
            hh = Linear(HID, HID, domain=(i,), w_init_fun=const_init(tcell.weight_hh),
                        b_init_fun=const_init(tcell.bias_hh))
            cell_params = ih.parameters + hh.parameters

            def cell(x: Any, h: Any) -> RT:
                return (ih(x) + hh(h)).tanh()

        out = _linear(tout, i)
        x = RT.source_with_ts_udf(lambda ts: xs[ts[t]].clone(), (B, D_IN), "float32",
                                  domain=(t,))
        y = RT.source_with_ts_udf(lambda ts: ys[ts[t]].clone(), (B, D_OUT), "float32",
                                  domain=(t,))
        h = RT.placeholder((B, HID), "float32", domain=(i, t))
        h[i, 0] = cell(x, RT.const(h0.numpy()))
        h[True] = cell(x, h[i, t - 1])
        step_loss = ((out(h) - y) ** 2).mean()  # over (i, t)
        loss = step_loss[i, 0:T_].mean(0)  # over (i,)
        loss.backward()
        params = cell_params + out.parameters
        make(params).step()
    return ctx, I, T_, loss, params, (tcell, tout, xs, ys, h0)


@pytest.mark.parametrize("name", list(CASES))
def test_mlp_training_tracks_torch_optim(name: str) -> None:
    make, make_torch, clip = CASES[name]
    ctx, I, loss, params, tls, X, Y = mlp_program(make)
    exe = ctx.compile({I: N})
    exe.execute()
    model = torch.nn.Sequential(tls[0], torch.nn.Tanh(), tls[1])
    tparams = [tls[0].weight, tls[0].bias, tls[1].weight, tls[1].bias]
    ref_losses, ref_params = _torch_train(
        tparams, make_torch, clip, lambda: ((model(X) - Y) ** 2).mean()
    )
    _check(exe, loss, params, ref_losses, ref_params)


def _run_rnn(name: str, cell_kind: str) -> None:
    make, make_torch, clip = CASES[name]
    ctx, I, T_, loss, params, (tcell, tout, xs, ys, h0) = rnn_program(make, cell_kind)
    exe = ctx.compile({I: N, T_: T})
    exe.execute()

    def loss_fn() -> torch.Tensor:
        h, total = h0, torch.zeros(())
        for k in range(T):
            h = tcell(xs[k], h)
            total = total + ((tout(h) - ys[k]) ** 2).mean()
        return total / T

    tparams = [tcell.weight_ih, tcell.bias_ih, tcell.weight_hh, tcell.bias_hh,
               tout.weight, tout.bias]
    ref_losses, ref_params = _torch_train(tparams, make_torch, clip, loss_fn)
    _check(exe, loss, params, ref_losses, ref_params)


@pytest.mark.parametrize("name", list(CASES))
def test_rnn_bptt_training_tracks_torch_optim(name: str) -> None:
    _run_rnn(name, "tanh")


def test_gru_bptt_training_tracks_torch_optim() -> None:
    _run_rnn("adam", "gru")
