"""A day-one training program: a 1-block causal transformer LM (Embedding, learned-free
positional table, 2-head attention over k[i, b, 0:t+1], ReLU MLP, output Linear) trained
with Adam over iterations i, the batch b and positions t as domain dims; the loss at i is
the mean next-token cross-entropy (log-softmax by logsumexp, target picked by index) over
x[i, 0:B, 0:T]; a different batch per iteration. Reference: the same model in torch eager
with torch.optim.Adam and the same initial weights. Checks the loss per iteration, the
weights at every iteration, and the compile time (CPU s)."""
import numpy as np
import torch

from common7 import compile_timed, np_of

I_, B_, T_, V, D, H = 4, 2, 5, 11, 8, 2
HD = D // H
LR = 0.02


def init(seed=3):
    g = np.random.default_rng(seed)
    f = lambda *s, sc=0.4: (g.normal(size=s) * sc).astype(np.float32)
    w = {"emb": f(V, D, sc=1.0), "q": f(D, D), "k": f(D, D), "v": f(D, D), "o": f(D, D),
         "m1": f(2 * D, D), "m1b": f(2 * D, sc=0.1), "m2": f(D, 2 * D), "out": f(V, D),
         "outb": f(V, sc=0.1)}
    pos = f(T_, D, sc=0.5)
    data = g.integers(0, V, size=(I_, B_, T_ + 1))
    return w, pos, data


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import Embedding, Linear
    from tempo.api.optim.optim import Adam
    from tempo.core.dtype import dtypes

    w, pos, data = init()
    ctx = TempoContext(cfg, dim_names=("i", "b", "t"))
    (i, I), (b, B), (t, T) = ctx.variables_and_bounds
    st = {}
    cinit = lambda a: (lambda shape, dtype, domain: RT.const(a))
    with ctx:
        emb = Embedding(V, D, domain=(i,), w_init_fun=cinit(w["emb"]))
        lin = {n: Linear(D, D, bias=False, domain=(i,), w_init_fun=cinit(w[n]))
               for n in ("q", "k", "v", "o")}
        m1 = Linear(D, 2 * D, domain=(i,), w_init_fun=cinit(w["m1"]), b_init_fun=cinit(w["m1b"]))
        m2 = Linear(2 * D, D, bias=False, domain=(i,), w_init_fun=cinit(w["m2"]))
        out = Linear(D, V, domain=(i,), w_init_fun=cinit(w["out"]), b_init_fun=cinit(w["outb"]))
        tokens = RT.const(data.astype(np.int64)).index(0, i).index(0, b)
        x_tok = tokens.index(0, t).cast(dtypes.default_int)
        y_tok = tokens.index(0, t + 1).cast(dtypes.default_int)
        x = emb(x_tok) + RT.const(pos).index(0, t)
        q = lin["q"](x).reshape((H, HD))
        k = lin["k"](x)
        v = lin["v"](x)
        K = k[i, b, 0:t + 1].reshape((-1, H, HD)).permute((1, 0, 2))
        Vv = v[i, b, 0:t + 1].reshape((-1, H, HD)).permute((1, 0, 2))
        p = ((q.unsqueeze(1) * K).sum(-1) / float(np.sqrt(HD))).softmax(-1)
        a = (p.unsqueeze(-1) * Vv).sum(1).reshape((D,))
        x = x + lin["o"](a)
        x = x + m2(m1(x).relu())
        logits = out(x)
        logp = logits - logits.logsumexp(0, keepdim=True)
        nll = -logp.index(0, y_tok)
        loss = nll[i, 0:B, 0:T].mean()
        loss.backward()
        params = emb.parameters + [p_ for m in (*lin.values(), m1, m2, out) for p_ in m.parameters]
        Adam(params, [], lr=LR).step()
        loss[0:I].sink_udf(lambda v_: st.__setitem__("loss", np_of(v_)))
        for n, m in (("q", lin["q"]), ("m1b", m1), ("emb", emb), ("out", out)):
            prm = m.parameters[-1] if n == "m1b" else m.parameters[0]
            prm[0:I].sink_udf(lambda v_, n=n: st.__setitem__(n, np_of(v_)))
    exe = compile_timed(ctx, {I: I_, B: B_, T: T_})
    exe.execute()

    tw = {n: torch.nn.Parameter(torch.tensor(a)) for n, a in w.items()}
    opt = torch.optim.Adam(tw.values(), lr=LR)
    losses, snaps = [], {n: [] for n in ("q", "m1b", "emb", "out")}
    P = torch.tensor(pos)
    for it in range(I_):
        for n in snaps:
            snaps[n].append(tw[n].detach().clone().numpy())
        tok = torch.tensor(data[it])
        xt, yt = tok[:, :-1], tok[:, 1:]
        x = tw["emb"][xt] + P
        q = (x @ tw["q"].T).reshape(B_, T_, H, HD).transpose(1, 2)
        k = (x @ tw["k"].T).reshape(B_, T_, H, HD).transpose(1, 2)
        v = (x @ tw["v"].T).reshape(B_, T_, H, HD).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / np.sqrt(HD)
        s = s.masked_fill(~torch.tril(torch.ones(T_, T_, dtype=torch.bool)), float("-inf"))
        a = (s.softmax(-1) @ v).transpose(1, 2).reshape(B_, T_, D)
        x = x + a @ tw["o"].T
        x = x + torch.relu(x @ tw["m1"].T + tw["m1b"]) @ tw["m2"].T
        logits = x @ tw["out"].T + tw["outb"]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), yt.reshape(-1))
        losses.append(loss.item())
        opt.zero_grad(); loss.backward(); opt.step()
    res = [("loss", st["loss"], np.array(losses, np.float32), 1e-4)]
    for n in snaps:
        res.append((f"w.{n}", st[n], np.stack(snaps[n]), 1e-4))
    return res
