"""Variable-length sequences in one batch, as a torch user does with pack_padded_sequence:
per-row lengths len[b] (a const table); the GRU state is frozen past the row's end
(h[b, t] = where(t < len[b], cell(x, h[b, t-1]), h[b, t-1])); the classifier reads each row's
last valid state by a data-dependent index h[b, 0:T].index(0, len[b] - 1) and also a masked
mean over time; cross-entropy loss, backward. Reference: torch.nn.GRU on a PackedSequence
(enforce_sorted=False) with the same weights, its h_n and the padded output's masked mean.
Checks logits, loss and every gradient."""
import numpy as np
import torch

from common7 import np_of

B_, T_, I, Hd, C = 3, 6, 3, 5, 4
LENS = np.array([6, 2, 4])


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import Linear
    from tempo.api.nn.rnn import GRUCell
    from tempo.core.dtype import dtypes

    g = np.random.default_rng(11)
    X = g.normal(size=(B_, T_, I)).astype(np.float32)
    X[np.arange(T_)[None, :] >= LENS[:, None]] = 0.0        # padding
    y = g.integers(0, C, size=(B_,))
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    st = {}
    with ctx:
        cell = GRUCell(I, Hd)
        head = Linear(2 * Hd, C)
        xl = RT.const(X, requires_grad=True)
        x = xl.index(0, b).index(0, t)
        ln = RT.const(LENS.astype(np.int64)).index(0, b).cast(dtypes.default_int)
        live = RT.from_symbol(t) < ln                          # (b, t) bool
        h = RT.placeholder((Hd,), dtypes.float32, domain=(b, t))
        h[b, 0] = cell(x, RT.zeros((Hd,)))
        h[True] = live.where(cell(x, h[b, t - 1]), h[b, t - 1])
        hs = h[b, 0:T]                                         # (T, Hd)
        last = hs.index(0, ln - 1)                             # (Hd,)
        m = (RT.arange(T) < ln).cast(dtypes.float32)           # (T,)
        avg = (hs * m.unsqueeze(-1)).sum(0) / ln.cast(dtypes.float32)
        logits = head(RT.cat(last, avg, dim=0))                # domain (b,)
        logp = logits - logits.logsumexp(0, keepdim=True)
        nll = -logp.index(0, RT.const(y.astype(np.int64)).index(0, b).cast(dtypes.default_int))
        loss = nll[0:B].mean()
        loss.backward()
        keep = lambda name, r: r.sink_udf(lambda v: st.__setitem__(name, np_of(v)))
        keep("logits", logits[0:B]); keep("loss", loss); keep("x.grad", xl.grad)
        for part in ("ih", "hh"):
            lin = getattr(cell, part)
            keep(f"{part}.w", lin.w); keep(f"{part}.b", lin.b)
            keep(f"{part}.w.grad", lin.w.grad); keep(f"{part}.b.grad", lin.b.grad)
        keep("head.w", head.w); keep("head.b", head.b)
        keep("head.w.grad", head.w.grad); keep("head.b.grad", head.b.grad)
    ctx.compile({B: B_, T: T_}).execute()

    gru = torch.nn.GRU(I, Hd, batch_first=True)
    lin = torch.nn.Linear(2 * Hd, C)
    with torch.no_grad():
        for part in ("ih", "hh"):
            getattr(gru, f"weight_{part}_l0").copy_(torch.tensor(st[f"{part}.w"]))
            getattr(gru, f"bias_{part}_l0").copy_(torch.tensor(st[f"{part}.b"]))
        lin.weight.copy_(torch.tensor(st["head.w"])); lin.bias.copy_(torch.tensor(st["head.b"]))
    xt = torch.tensor(X, requires_grad=True)
    packed = torch.nn.utils.rnn.pack_padded_sequence(xt, torch.tensor(LENS), batch_first=True,
                                                     enforce_sorted=False)
    out, hn = gru(packed)
    pad, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=T_)
    avg = pad.sum(1) / torch.tensor(LENS, dtype=torch.float32)[:, None]
    L = lin(torch.cat([hn[0], avg], -1))
    loss = torch.nn.functional.cross_entropy(L, torch.tensor(y))
    loss.backward()
    res = [("logits", st["logits"], L.detach().numpy(), 1e-5),
           ("loss", st["loss"], loss.detach().numpy(), 1e-5),
           ("x.grad", st["x.grad"], xt.grad.numpy(), 1e-5),
           ("head.w.grad", st["head.w.grad"], lin.weight.grad.numpy(), 1e-5),
           ("head.b.grad", st["head.b.grad"], lin.bias.grad.numpy(), 1e-5)]
    for part in ("ih", "hh"):
        res.append((f"{part}.w.grad", st[f"{part}.w.grad"], getattr(gru, f"weight_{part}_l0").grad.numpy(), 1e-5))
        res.append((f"{part}.b.grad", st[f"{part}.b.grad"], getattr(gru, f"bias_{part}_l0").grad.numpy(), 1e-5))
    return res
