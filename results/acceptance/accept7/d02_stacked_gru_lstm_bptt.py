"""Stacked recurrent nets from nn cells vs torch.nn.GRU / torch.nn.LSTM (num_layers=2,
batch_first) with the same weights: the hidden states over (b, t), a loss summed over the
batch and time, one backward, and the gradient of every cell parameter and of the input.
Layer 1 is written `h[b, 0] = cell(x, 0); h[True] = cell(x, h[b, t-1])`, layer 2 with shift
sugar `s[b, 0] = 0; s[b, t+1] = cell(h, s)` (outputs s[b, t+1]). The LSTM carries (h, c) as
two placeholders. Weights are Tempo's own initialisation read back by sinks."""
import numpy as np
import torch

from common7 import compile_timed, np_of

B_, T_, I, Hd = 2, 6, 3, 4


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn.rnn import GRUCell, LSTMCell
    from tempo.core.dtype import dtypes

    g = np.random.default_rng(1)
    X = g.normal(size=(B_, T_, I)).astype(np.float32)
    Wout = g.normal(size=(Hd,)).astype(np.float32)
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    st = {}
    with ctx:
        xc = RT.const(X, requires_grad=True)
        xl = RT.const(X.copy(), requires_grad=True)
        wo = RT.const(Wout)
        # GRU
        g1, g2 = GRUCell(I, Hd), GRUCell(Hd, Hd)
        x = xc.index(0, b).index(0, t)
        h = RT.placeholder((Hd,), dtypes.float32, domain=(b, t))
        h[b, 0] = g1(x, RT.zeros((Hd,)))
        h[True] = g1(x, h[b, t - 1])
        s = RT.placeholder((Hd,), dtypes.float32, domain=(b, t))
        s[b, 0] = RT.zeros((Hd,))
        s[b, t + 1] = g2(h, s)
        y = s[b, t + 1]
        loss = ((y * wo).sum() + (y * y).sum() * 0.1)[0:B, 0:T].sum()
        loss.backward()
        # LSTM
        l1, l2 = LSTMCell(I, Hd), LSTMCell(Hd, Hd)
        x2 = xl.index(0, b).index(0, t)
        h1 = RT.placeholder((Hd,), dtypes.float32, domain=(b, t))
        c1 = RT.placeholder((Hd,), dtypes.float32, domain=(b, t))
        hn, cn = l1(x2, (RT.zeros((Hd,)), RT.zeros((Hd,))))
        h1[b, 0] = hn
        c1[b, 0] = cn
        hn, cn = l1(x2, (h1[b, t - 1], c1[b, t - 1]))
        h1[True] = hn
        c1[True] = cn
        h2 = RT.placeholder((Hd,), dtypes.float32, domain=(b, t))
        c2 = RT.placeholder((Hd,), dtypes.float32, domain=(b, t))
        h2[b, 0] = RT.zeros((Hd,))
        c2[b, 0] = RT.zeros((Hd,))
        hn, cn = l2(h1, (h2, c2))
        h2[b, t + 1] = hn
        c2[b, t + 1] = cn
        y2 = h2[b, t + 1]
        loss2 = ((y2 * wo).sum() + (y2 * y2).sum() * 0.1)[0:B, 0:T].sum()
        loss2.backward()

        def keep(name, r):
            r.sink_udf(lambda v: st.__setitem__(name, np_of(v)))
        keep("gru.y", y[0:B, 0:T]); keep("gru.loss", loss)
        keep("lstm.y", y2[0:B, 0:T]); keep("lstm.loss", loss2)
        keep("gru.xgrad", xc.grad); keep("lstm.xgrad", xl.grad)
        for tag, cells in (("gru", (g1, g2)), ("lstm", (l1, l2))):
            for k, c in enumerate(cells):
                for part in ("ih", "hh"):
                    lin = getattr(c, part)
                    keep(f"{tag}.{part}{k}.w", lin.w[0] if lin.w.domain.variables else lin.w)
                    keep(f"{tag}.{part}{k}.b", lin.b)
                    keep(f"{tag}.{part}{k}.w.grad", lin.w.grad)
                    keep(f"{tag}.{part}{k}.b.grad", lin.b.grad)
    exe = compile_timed(ctx, {B: B_, T: T_})
    exe.execute()

    res = []
    for tag, cls in (("gru", torch.nn.GRU), ("lstm", torch.nn.LSTM)):
        net = cls(I, Hd, num_layers=2, batch_first=True)
        with torch.no_grad():
            for k in range(2):
                for part in ("ih", "hh"):
                    getattr(net, f"weight_{part}_l{k}").copy_(torch.tensor(st[f"{tag}.{part}{k}.w"]))
                    getattr(net, f"bias_{part}_l{k}").copy_(torch.tensor(st[f"{tag}.{part}{k}.b"]))
        xt = torch.tensor(X, requires_grad=True)
        yt, _ = net(xt)
        lt = (yt @ torch.tensor(Wout)).sum() + (yt * yt).sum() * 0.1
        lt.backward()
        res.append((f"{tag}.y", st[f"{tag}.y"], yt.detach().numpy(), 1e-5))
        res.append((f"{tag}.loss", st[f"{tag}.loss"], lt.detach().numpy(), 1e-4))
        res.append((f"{tag}.xgrad", st[f"{tag}.xgrad"], xt.grad.numpy(), 1e-5))
        for k in range(2):
            for part in ("ih", "hh"):
                res.append((f"{tag}.{part}{k}.w.grad", st[f"{tag}.{part}{k}.w.grad"],
                            getattr(net, f"weight_{part}_l{k}").grad.numpy(), 1e-4))
                res.append((f"{tag}.{part}{k}.b.grad", st[f"{tag}.{part}{k}.b.grad"],
                            getattr(net, f"bias_{part}_l{k}").grad.numpy(), 1e-4))
    return res
