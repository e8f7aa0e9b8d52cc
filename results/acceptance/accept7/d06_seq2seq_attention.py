"""A seq2seq model as a user writes it with two time dims: a GRU encoder over source
positions s (enc[b, s]), a GRU decoder over target positions t whose initial state is the
encoder's last state enc[b, S-1] and which attends (dot-product, softmax) over all encoder
states enc[b, 0:S] at every step (input feeding: the previous step's context is concatenated
to the input), with teacher forcing (input = embedding of the previous target token, BOS at
t = 0); loss = mean cross-entropy over (b, t); one backward. Reference: torch eager
(nn.GRUCell loops) with the same weights. Checks logits, loss and the gradients of the
encoder/decoder cells, the embedding and the output layer."""
import numpy as np
import torch

from common7 import np_of

B_, S_, T_, V, E, Hd = 2, 5, 4, 9, 6, 8


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import Linear
    from tempo.api.nn.rnn import GRUCell
    from tempo.core.dtype import dtypes

    g = np.random.default_rng(5)
    emb = (g.normal(size=(V, E)) * 0.5).astype(np.float32)
    src = g.integers(1, V, size=(B_, S_))
    tgt = g.integers(1, V, size=(B_, T_))
    ctx = TempoContext(cfg, dim_names=("b", "s", "t"))
    (b, B), (s, S), (t, T) = ctx.variables_and_bounds
    st = {}
    with ctx:
        E_ = RT.const(emb, requires_grad=True)
        enc_cell, dec_cell = GRUCell(E, Hd), GRUCell(E + Hd, Hd)
        out = Linear(2 * Hd, V)
        src_ids = RT.const(src.astype(np.int64)).index(0, b).index(0, s).cast(dtypes.default_int)
        xs = E_.index(0, src_ids)
        enc = RT.placeholder((Hd,), dtypes.float32, domain=(b, s))
        enc[b, 0] = enc_cell(xs, RT.zeros((Hd,)))
        enc[True] = enc_cell(xs, enc[b, s - 1])
        # teacher forcing: token 0 is BOS, then the previous target token
        tg = RT.const(tgt.astype(np.int64)).index(0, b)
        prev = RT.placeholder((), dtypes.default_int, domain=(b, t))
        prev[b, 0] = RT.const(0, dtype=dtypes.default_int)
        prev[True] = tg.index(0, t - 1).cast(dtypes.default_int)
        xt = E_.index(0, prev)
        dec = RT.placeholder((Hd,), dtypes.float32, domain=(b, t))
        mem = enc[b, 0:S]                                     # (S, Hd)
        ctx_prev = RT.placeholder((Hd,), dtypes.float32, domain=(b, t))
        dec[b, 0] = dec_cell(RT.cat(xt, ctx_prev, dim=0), enc[b, S - 1])
        dec[True] = dec_cell(RT.cat(xt, ctx_prev, dim=0), dec[b, t - 1])
        att = (mem * dec.unsqueeze(0)).sum(-1).softmax(-1)    # (S,)
        ctxv = (att.unsqueeze(-1) * mem).sum(0)               # (Hd,)
        ctx_prev[b, 0] = RT.zeros((Hd,))
        ctx_prev[True] = ctxv[b, t - 1]
        logits = out(RT.cat(dec, ctxv, dim=0))
        logp = logits - logits.logsumexp(0, keepdim=True)
        nll = -logp.index(0, tg.index(0, t).cast(dtypes.default_int))
        loss = nll[0:B, 0:T].mean()
        loss.backward()
        keep = lambda name, r: r.sink_udf(lambda v: st.__setitem__(name, np_of(v)))
        keep("logits", logits[0:B, 0:T]); keep("loss", loss); keep("E.grad", E_.grad)
        for n, c in (("enc", enc_cell), ("dec", dec_cell)):
            for part in ("ih", "hh"):
                lin = getattr(c, part)
                keep(f"{n}.{part}.w", lin.w); keep(f"{n}.{part}.b", lin.b)
                keep(f"{n}.{part}.w.grad", lin.w.grad); keep(f"{n}.{part}.b.grad", lin.b.grad)
        keep("out.w", out.w); keep("out.b", out.b)
        keep("out.w.grad", out.w.grad); keep("out.b.grad", out.b.grad)
    ctx.compile({B: B_, S: S_, T: T_}).execute()

    tE = torch.tensor(emb, requires_grad=True)
    cells = {}
    for n, i_sz in (("enc", E), ("dec", E + Hd)):
        c = torch.nn.GRUCell(i_sz, Hd)
        with torch.no_grad():
            for part in ("ih", "hh"):
                getattr(c, f"weight_{part}").copy_(torch.tensor(st[f"{n}.{part}.w"]))
                getattr(c, f"bias_{part}").copy_(torch.tensor(st[f"{n}.{part}.b"]))
        cells[n] = c
    lin = torch.nn.Linear(2 * Hd, V)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor(st["out.w"])); lin.bias.copy_(torch.tensor(st["out.b"]))
    h = torch.zeros(B_, Hd); encs = []
    for k in range(S_):
        h = cells["enc"](tE[torch.tensor(src[:, k])], h); encs.append(h)
    mem = torch.stack(encs, 1)                               # (B, S, Hd)
    d, cprev, lgs = h, torch.zeros(B_, Hd), []
    for k in range(T_):
        tok = torch.zeros(B_, dtype=torch.long) if k == 0 else torch.tensor(tgt[:, k - 1])
        d = cells["dec"](torch.cat([tE[tok], cprev], -1), d)
        a = (mem * d[:, None]).sum(-1).softmax(-1)
        cv = (a[..., None] * mem).sum(1)
        lgs.append(lin(torch.cat([d, cv], -1))); cprev = cv
    L = torch.stack(lgs, 1)
    loss = torch.nn.functional.cross_entropy(L.reshape(-1, V), torch.tensor(tgt).reshape(-1))
    loss.backward()
    res = [("logits", st["logits"], L.detach().numpy(), 1e-5), ("loss", st["loss"], loss.detach().numpy(), 1e-5),
           ("E.grad", st["E.grad"], tE.grad.numpy(), 1e-5),
           ("out.w.grad", st["out.w.grad"], lin.weight.grad.numpy(), 1e-5),
           ("out.b.grad", st["out.b.grad"], lin.bias.grad.numpy(), 1e-5)]
    for n, c in cells.items():
        for part in ("ih", "hh"):
            res.append((f"{n}.{part}.w.grad", st[f"{n}.{part}.w.grad"], getattr(c, f"weight_{part}").grad.numpy(), 1e-5))
            res.append((f"{n}.{part}.b.grad", st[f"{n}.{part}.b.grad"], getattr(c, f"bias_{part}").grad.numpy(), 1e-5))
    return res
