"""A user-written 2-layer GPT decoding greedily over (b, t) with batch B = 3 as a domain dim:
prompts of length P from a const table (`prompt.index(0, b).index(0, t)`), afterwards the
argmax of the previous step's logits fed back. Two models share the weights: one attends to
the growing KV cache k[b, 0:t+1], one to a sliding window k[b, max(0, t-W+1):t+1].
Reference: torch eager, full recompute of the prefix at every step with the same weights and
a causal / banded mask. Checks tokens (exact) and logits at every point."""
import numpy as np
import torch

from common7 import compile_timed, np_of

V, D, H, L, P, W, B_, T_ = 23, 16, 4, 2, 3, 3, 3, 11
HD = D // H


def weights(seed=0):
    g = np.random.default_rng(seed)
    f = lambda *s, sc=0.3: (g.normal(size=s) * sc).astype(np.float32)
    w = {"wte": f(V, D, sc=1.0), "wpe": f(T_, D, sc=0.5)}
    for l in range(L):
        for n in ("q", "k", "v", "o"):
            w[f"{n}{l}"] = f(D, D)
        w[f"ff1{l}"], w[f"ff2{l}"] = f(D, 2 * D), f(2 * D, D)
        w[f"g{l}"], w[f"beta{l}"] = 1 + f(D, sc=0.1), f(D, sc=0.1)
    prompt = g.integers(0, V, size=(B_, P))
    return w, prompt


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes

    w, prompt = weights()
    ctx = TempoContext(cfg, num_dims=2)
    (b, B), (t, T) = ctx.variables_and_bounds
    out = {}
    with ctx:
        C = {k: RT.const(v) for k, v in w.items()}
        pr = RT.const(prompt.astype(np.int64))

        def ln(x, l):
            mu = x.mean(-1, keepdim=True)
            var = ((x - mu) ** 2).mean(-1, keepdim=True)
            return (x - mu) / (var + 1e-5).sqrt() * C[f"g{l}"] + C[f"beta{l}"]

        def model(window):
            tok = RT.placeholder((), dtypes.default_int, domain=(b, t))
            x = C["wte"].index(0, tok) + C["wpe"].index(0, t)
            for l in range(L):
                h = ln(x, l)
                q = (h @ C[f"q{l}"]).reshape((H, HD))
                k = h @ C[f"k{l}"]
                v = h @ C[f"v{l}"]
                lo = ie.max(0, t - W + 1) if window else 0
                K = k[b, lo:t + 1].reshape((-1, H, HD)).permute((1, 0, 2))   # (H, n, HD)
                Vv = v[b, lo:t + 1].reshape((-1, H, HD)).permute((1, 0, 2))
                s = (q.unsqueeze(1) * K).sum(-1) / float(np.sqrt(HD))       # (H, n)
                p = s.softmax(-1)
                a = (p.unsqueeze(-1) * Vv).sum(1).reshape((D,))
                x = x + a @ C[f"o{l}"]
                x = x + (ln(x, l) @ C[f"ff1{l}"]).swish() @ C[f"ff2{l}"]
            logits = x @ C["wte"].transpose()
            tok[t < P] = pr.index(0, b).index(0, t).cast(dtypes.default_int)
            tok[True] = logits[b, t - 1].argmax().cast(dtypes.default_int)
            return tok, logits

        for name, win in (("causal", False), ("window", True)):
            tok, logits = model(win)
            tok[0:B, 0:T].sink_udf(lambda v, n=name: out.__setitem__(("tok", n), np_of(v)))
            logits[0:B, 0:T].sink_udf(lambda v, n=name: out.__setitem__(("lg", n), np_of(v)))
    exe = compile_timed(ctx, {B: B_, T: T_})
    exe.execute()

    res = []
    tw = {k: torch.tensor(v) for k, v in w.items()}
    for name, win in (("causal", False), ("window", True)):
        toks = torch.tensor(prompt)
        lg_all = None
        for step in range(P, T_ + 1):
            n = toks.shape[1]
            x = tw["wte"][toks] + tw["wpe"][:n]
            i = torch.arange(n)
            mask = (i[None, :] <= i[:, None])
            if win:
                mask &= i[None, :] > i[:, None] - W
            for l in range(L):
                def tln(z):
                    return torch.nn.functional.layer_norm(z, (D,), tw[f"g{l}"], tw[f"beta{l}"], 1e-5)
                h = tln(x)
                q = (h @ tw[f"q{l}"]).reshape(B_, n, H, HD).transpose(1, 2)
                k = (h @ tw[f"k{l}"]).reshape(B_, n, H, HD).transpose(1, 2)
                v = (h @ tw[f"v{l}"]).reshape(B_, n, H, HD).transpose(1, 2)
                s = (q @ k.transpose(-1, -2)) / np.sqrt(HD)
                s = s.masked_fill(~mask, float("-inf"))
                a = (s.softmax(-1) @ v).transpose(1, 2).reshape(B_, n, D)
                x = x + a @ tw[f"o{l}"]
                x = x + torch.nn.functional.silu(tln(x) @ tw[f"ff1{l}"]) @ tw[f"ff2{l}"]
            lg_all = x @ tw["wte"].T
            if step < T_:
                toks = torch.cat([toks, lg_all[:, -1].argmax(-1, keepdim=True)], 1)
        res.append((f"{name}.tokens", out[("tok", name)].astype(np.int64), toks.numpy(), 0))
        res.append((f"{name}.logits", out[("lg", name)], lg_all.numpy(), 2e-4))
    return res
