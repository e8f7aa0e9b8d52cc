"""§6.1 Embedding + LSTMCell + Linear as a character language model trained over (i, t):
each iteration i reads a window of a fixed token stream (RT.const(corpus).index(0, i*S + t)),
runs the LSTM over t (h, c recurrences), cross-entropy of the next token (log_softmax
gathered by index), mean over t through x[i, 0:T], AdamW(wd=0.05, max_norm=0.5) over i.
Reference: torch.nn.Embedding/LSTMCell/Linear with the same initial weights (read back from
the i = 0 points), torch.optim.AdamW + clip_grad_norm_ on the same windows: losses of all
iterations and the final embedding table."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

I_, T_, V, E, H, S = 4, 6, 7, 5, 8, 3


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import Embedding, Linear
    from tempo.api.nn.rnn import LSTMCell
    from tempo.api.optim.optim import AdamW
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(12)
    corpus = rng.integers(0, V, size=I_ * S + T_ + 1).astype(np.int64)
    s = {}
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    with ctx:
        emb = Embedding(V, E, domain=(i,))
        cell = LSTMCell(E, H, domain=(i,))
        head = Linear(H, V, domain=(i,))
        stream = RT.const(corpus).cast(dtypes.default_int)
        tok = stream.index(0, i * S + t)
        nxt = stream.index(0, i * S + t + 1)
        h = RT.placeholder((H,), dtypes.float32, domain=(i, t))
        c = RT.placeholder((H,), dtypes.float32, domain=(i, t))
        h[i, 0] = RT.zeros((H,))
        c[i, 0] = RT.zeros((H,))
        h1, c1 = cell(emb(tok), (h, c))
        h[i, t + 1] = h1
        c[i, t + 1] = c1
        logp = head(h1).softmax(-1).ln()
        nll = -logp.index(0, nxt)
        loss = nll[i, 0:T].mean()
        opt = AdamW(emb.parameters + cell.parameters + head.parameters, [], lr=0.03, wd=0.05, max_norm=0.5)
        loss.backward()
        opt.step()
        loss[0:I].sink_udf(grab(s, "loss"))
        emb.embed_table[I - 1].sink_udf(grab(s, "emb_last"))
        for name, p in (("emb", emb.embed_table), ("wih", cell.ih.w), ("bih", cell.ih.b), ("whh", cell.hh.w),
                        ("bhh", cell.hh.b), ("wo", head.w), ("bo", head.b)):
            p[0].sink_udf(grab(s, name))
    ctx.compile({I: I_, T: T_}).execute()
    te, tc, tl = torch.nn.Embedding(V, E), torch.nn.LSTMCell(E, H), torch.nn.Linear(H, V)
    with torch.no_grad():
        te.weight.copy_(torch.tensor(s["emb"]))
        tc.weight_ih.copy_(torch.tensor(s["wih"])); tc.bias_ih.copy_(torch.tensor(s["bih"]))
        tc.weight_hh.copy_(torch.tensor(s["whh"])); tc.bias_hh.copy_(torch.tensor(s["bhh"]))
        tl.weight.copy_(torch.tensor(s["wo"])); tl.bias.copy_(torch.tensor(s["bo"]))
    ps = list(te.parameters()) + list(tc.parameters()) + list(tl.parameters())
    opt = torch.optim.AdamW(ps, lr=0.03, weight_decay=0.05)
    losses = []
    for it in range(I_):
        hh, cc = torch.zeros(1, H), torch.zeros(1, H); nl = []
        for k in range(T_):
            hh, cc = tc(te(torch.tensor([corpus[it * S + k]])), (hh, cc))
            nl.append(-torch.log_softmax(tl(hh), -1)[0, corpus[it * S + k + 1]])
        L = torch.stack(nl).mean()
        opt.zero_grad(); L.backward(); torch.nn.utils.clip_grad_norm_(ps, 0.5); opt.step()
        losses.append(L.item())
        if it == I_ - 2:
            emb_last = te.weight.detach().numpy().copy()
    return [("loss", s["loss"], np.array(losses, np.float32), 2e-5), ("emb_at_I-1", s["emb_last"], emb_last, 2e-5)]
