"""Windows and suffixes on the MIDDLE of three dims (b, i, t), with gradients, vs torch
autograd: y = tanh(X * w) (leaf w (H,)); a window over i (the middle dim) of the previous
two i at the same (b, t): y[b, max(0, i-1):i+1, t].mean(0); a suffix over t discounted by
gamma ** arange(T - t); a per-(i) reduction over both outer and inner dims y[0:B, i, 0:T]
(a slice over b AND t at once, then sum); a recurrence over i carrying a (b, t)-wise running
max (m[b, 0, t] = y, m[b, i, t] = maximum(m[b, i-1, t], y)); loss = sum over everything of
a weighted mix, backward; checks the window, the suffix, the per-i sums, the running max
and w.grad (torch on the dense (B, I, T, H) tensor)."""
import numpy as np
import torch

from common8 import np_of

B_, I_, T_, H = 2, 4, 3, 2
GAMMA = 0.7


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api import max as ie_max
    from tempo.core.dtype import dtypes

    g = np.random.default_rng(13)
    X = g.normal(size=(B_, I_, T_, H)).astype(np.float32)
    w0 = g.normal(size=(H,)).astype(np.float32)
    ctx = TempoContext(cfg, dim_names=("b", "i", "t"))
    (b, B), (i, I), (t, T) = ctx.variables_and_bounds
    st = {}
    with ctx:
        w = RT.const(w0, requires_grad=True)
        y = (RT.const(X).index(0, b).index(0, i).index(0, t) * w).tanh().sum()   # () (b,i,t)
        win = y[b, ie_max(0, i - 1):i + 1, t].mean(0)
        suf = (GAMMA ** RT.arange(T - t).cast(dtypes.float32) * y[b, i, t:T]).sum(0)
        per_i = y[0:B, i, 0:T].sum()                                            # (i,)
        m = RT.placeholder((), dtypes.float32, domain=(b, i, t))
        m[b, 0, t] = y
        m[True] = m[b, i - 1, t].maximum(y)
        loss = (win + 0.5 * suf + 0.3 * m)[0:B, 0:I, 0:T].sum() + (per_i ** 2)[0:I].sum() * 0.1
        loss.backward()
        for name, z in (("win", win), ("suf", suf), ("m", m)):
            z[0:B, 0:I, 0:T].sink_udf(lambda a, name=name: st.__setitem__(name, np_of(a)))
        per_i[0:I].sink_udf(lambda a: st.__setitem__("per_i", np_of(a)))
        w.grad.sink_udf(lambda a: st.__setitem__("gw", np_of(a)))
    ctx.compile({B: B_, I: I_, T: T_}).execute()

    wt = torch.tensor(w0, requires_grad=True)
    yt = torch.tanh(torch.tensor(X) * wt).sum(-1)                                # (B, I, T)
    win = torch.stack([yt[:, max(0, k - 1):k + 1].mean(1) for k in range(I_)], 1)
    suf = torch.stack([sum(GAMMA ** j * yt[:, :, k + j] for j in range(T_ - k))
                       for k in range(T_)], 2)
    per_i = yt.sum((0, 2))
    m = torch.cummax(yt, dim=1).values
    loss = (win + 0.5 * suf + 0.3 * m).sum() + (per_i ** 2).sum() * 0.1
    loss.backward()
    d = lambda a: a.detach().numpy()  # noqa: E731
    return [("window over i", st["win"], d(win), 1e-5), ("suffix over t", st["suf"], d(suf), 1e-5),
            ("per-i sums", st["per_i"], d(per_i), 1e-5), ("running max over i", st["m"], d(m), 1e-6),
            ("w.grad", st["gw"], d(wt.grad), 1e-4)]
