"""A tied-embedding language model (the output layer is the embedding table, as GPT-2) trained
with SGD(momentum=0.9, weight_decay=0.01, max_norm=1.0) over iterations i; inside each
iteration a causal window x[i, max(0, t-W+1):t+1] of the token embeddings is averaged
(window of symbolic length, clamped at 0), tanh(Linear), logits = h @ E^T with the SAME
parameter E the embedding reads (its gradient is the sum of both uses), log-softmax by
logsumexp, NLL of the next token by a spatial index, mean over x[i, 0:T]. Reference:
torch.nn.functional.embedding + F.linear with one tied tensor, torch.optim.SGD(momentum,
weight_decay) + clip_grad_norm_. Checks: the losses of all iterations, the table at each i."""
import numpy as np
import torch

from common8 import Inits, np_of

I_, T_, V, D, W = 4, 6, 7, 5, 3
LR = 0.3


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api import max as ie_max
    from tempo.api.nn import Embedding, Linear
    from tempo.api.optim.optim import SGD

    g = np.random.default_rng(5)
    corpus = g.integers(0, V, size=(I_ * T_ + 1,)).astype(np.int64)
    inits = Inits(3)
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    st = {}
    with ctx:
        emb = Embedding(V, D, domain=(i,), w_init_fun=inits)
        lin = Linear(D, D, domain=(i,), w_init_fun=inits)
        E0, W0 = inits.made
        stream = RT.const(corpus)
        tok = stream.index(0, i * T + t)
        nxt = stream.index(0, i * T + t + 1)
        e = emb(tok)                                                   # (D,) over (i, t)
        ctxv = e[i, ie_max(0, t - W + 1):t + 1].mean(0)
        h = lin(ctxv).tanh()
        logits = h @ emb.embed_table.transpose()                       # (V,) tied
        logp = logits - logits.logsumexp(0)
        nll = -logp.index(0, nxt)
        loss = nll[i, 0:T].mean()
        loss.backward()
        SGD(emb.parameters + lin.parameters, [], lr=LR, momentum=0.9, weight_decay=0.01,
            max_norm=1.0).step()
        loss[0:I].sink_udf(lambda x: st.__setitem__("loss", np_of(x)))
        emb.embed_table[0:I].sink_udf(lambda x: st.__setitem__("E", np_of(x)))
    ctx.compile({I: I_, T: T_}).execute()

    E = torch.tensor(E0, requires_grad=True)
    Wt = torch.tensor(W0, requires_grad=True)
    bt = torch.zeros(D, requires_grad=True)
    opt = torch.optim.SGD([E, Wt, bt], lr=LR, momentum=0.9, weight_decay=0.01)
    losses, Es = [], []
    for it in range(I_):
        Es.append(E.detach().clone().numpy())
        toks = torch.tensor(corpus[it * T_: it * T_ + T_])
        nx = torch.tensor(corpus[it * T_ + 1: it * T_ + T_ + 1])
        e = torch.nn.functional.embedding(toks, E)
        ctxs = torch.stack([e[max(0, k - W + 1):k + 1].mean(0) for k in range(T_)])
        h = torch.tanh(ctxs @ Wt.T + bt)
        logits = h @ E.T
        loss = torch.nn.functional.cross_entropy(logits, nx)
        losses.append(loss.item())
        opt.zero_grad(); loss.backward()
        torch.nn.utils.clip_grad_norm_([E, Wt, bt], 1.0)
        opt.step()
    return [("loss", st["loss"], np.array(losses, np.float32), 2e-5),
            ("E", st["E"], np.stack(Es), 2e-5)]
