"""§6.1 layers inside temporal programs over (b, t), values AND parameter gradients vs torch
autograd: MultiHeadAttention (4 heads, 2 KV heads, bias) with attention patterns accept2-5
never used: bidirectional `0:T`, anti-causal `t:T`, one-token lookahead `0:min(t+2, T)`;
a LayerNorm inside a recurrence h[b, t+1] = LayerNorm(tanh(Linear(h) + x)); a Conv1d over a
clamped 3-step time window (stack of x[max(t-2,0)], x[max(t-1,0)], x[t] as channels x width);
an Embedding whose ids come from a recurrence fed back through argmax. Loss = sum of all."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

B_, T_, E, H, KV = 2, 5, 8, 4, 2


def ref(X, P):
    ps = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in P.items()}
    x = torch.tensor(X, dtype=torch.float64)
    hd = E // H
    def mha(lo_hi):
        q = (x @ ps["wq"].T + ps["bq"]).reshape(B_, T_, H, hd)
        k = (x @ ps["wk"].T + ps["bk"]).reshape(B_, T_, KV, hd).repeat_interleave(H // KV, 2)
        v = (x @ ps["wv"].T + ps["bv"]).reshape(B_, T_, KV, hd).repeat_interleave(H // KV, 2)
        outs = []
        for tt in range(T_):
            lo, hi = lo_hi(tt)
            sc = torch.einsum("bhd,bshd->bhs", q[:, tt], k[:, lo:hi]) / hd ** 0.5
            outs.append(torch.einsum("bhs,bshd->bhd", sc.softmax(-1), v[:, lo:hi]).reshape(B_, E))
        return torch.stack(outs, 1) @ ps["wo"].T + ps["bo"]
    full, anti, look = mha(lambda tt: (0, T_)), mha(lambda tt: (tt, T_)), mha(lambda tt: (0, min(tt + 2, T_)))
    h = [torch.zeros(B_, E, dtype=torch.float64)]
    for tt in range(T_):
        z = torch.tanh(h[-1] @ ps["wl"].T + ps["bl"] + x[:, tt])
        h.append(torch.nn.functional.layer_norm(z, (E,), ps["lnw"], ps["lnb"], 1e-5))
    hs = torch.stack(h[1:], 1)
    win = torch.stack([x[:, [max(tt - 2, 0), max(tt - 1, 0), tt]] for tt in range(T_)], 1)  # (B,T,3,E)
    cv = torch.nn.functional.conv1d(win.reshape(B_ * T_, 3, E).transpose(1, 2), ps["cw"], ps["cb"]).reshape(B_, T_, 4)
    ids = [torch.zeros(B_, dtype=torch.long)]
    embs = []
    for tt in range(T_):
        e = ps["emb"][ids[-1]]
        embs.append(e)
        ids.append((e @ torch.tensor(P["proj"], dtype=torch.float64)).argmax(-1))
    em = torch.stack(embs, 1)
    loss = (full ** 2).sum() + anti.sum() + (look * 0.5).sum() + (hs ** 3).sum() + cv.tanh().sum() + (em ** 2).sum()
    loss.backward()
    vals = {"full": full, "anti": anti, "look": look, "h": hs, "conv": cv, "ids": torch.stack(ids[:-1], 1)}
    return {k: v.detach().numpy() for k, v in vals.items()}, {k: ps[k].grad.numpy() for k in ("wq", "bk", "wo", "wl", "lnw", "lnb", "cw", "emb")}


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import Linear, Embedding, Conv1d
    from tempo.api.nn.norm import LayerNorm
    from tempo.api.nn.multihead_attention import MultiHeadAttention
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(5)
    X = rng.normal(size=(B_, T_, E)).astype(np.float32)
    P = {"wq": (E, E), "bq": (E,), "wk": (KV * 2, E), "bk": (KV * 2,), "wv": (KV * 2, E), "bv": (KV * 2,),
         "wo": (E, E), "bo": (E,), "wl": (E, E), "bl": (E,), "lnw": (E,), "lnb": (E,), "cw": (4, E, 3), "cb": (4,),
         "emb": (6, E), "proj": (E, 6)}
    P = {k: (rng.normal(size=v) * 0.5).astype(np.float32) for k, v in P.items()}
    P["lnw"] += 1.0
    c = lambda a: (lambda shape, dtype, domain: RT.const(a))
    s = {}
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    with ctx:
        x = RT.const(X).index(0, b).index(0, t)
        mha = MultiHeadAttention(E, H, t, bias=True, num_kv_heads=KV,
                                 w_init_funs=[c(P["wq"]), c(P["wk"]), c(P["wv"]), c(P["wo"])],
                                 b_init_funs=[c(P["bq"]), c(P["bk"]), c(P["bv"]), c(P["bo"])])
        full = mha(x, ie.slice_(0, T))
        anti = mha(x, ie.slice_(t, T))
        look = mha(x, ie.slice_(0, ie.min(t + 2, T)))
        lin = Linear(E, E, w_init_fun=c(P["wl"]), b_init_fun=c(P["bl"]))
        ln = LayerNorm(E, w_init_fun=c(P["lnw"]), b_init_fun=c(P["lnb"]))
        h = RT.placeholder((E,), dtypes.float32, domain=(b, t))
        h[b, 0] = ln((lin(RT.zeros((E,))) + x).tanh())
        h[b, t + 1] = ln((lin(h) + x[b, t + 1]).tanh())
        win = RT.stack([x[b, ie.max(t - 2, 0)], x[b, ie.max(t - 1, 0)], x[b, t]])  # (3, E)
        conv = Conv1d(E, 4, kernel_size=3, w_init_fun=c(P["cw"]), b_init_fun=c(P["cb"].reshape(4, 1)))
        cv = conv(win.transpose(0, 1)).reshape((4,))
        emb = Embedding(6, E, w_init_fun=c(P["emb"]))
        ids = RT.placeholder((), dtypes.int64, domain=(b, t))
        ids[b, 0] = RT.const(0, dtype=dtypes.int64)
        e = emb(ids)
        ids[b, t + 1] = (e @ RT.const(P["proj"])).argmax(0).cast(dtypes.int64)
        per = (full ** 2).sum() + anti.sum() + (look * 0.5).sum() + (h ** 3).sum() + cv.tanh().sum() + (e ** 2).sum()
        loss = per[0:B, 0:T].sum()
        loss.backward()
        for name, v in (("full", full), ("anti", anti), ("look", look), ("h", h), ("conv", cv), ("ids", ids)):
            v[0:B, 0:T].sink_udf(grab(s, name))
        for name, p in (("wq", mha.q_proj.w), ("bk", mha.k_proj.b), ("wo", mha.output_proj.w), ("wl", lin.w),
                        ("lnw", ln.w), ("lnb", ln.b), ("cw", conv.w), ("emb", emb.embed_table)):
            p.grad.sink_udf(grab(s, "g_" + name))
    ctx.compile({B: B_, T: T_}).execute()
    vals, grads = ref(X, P)
    out = [(k, s[k], vals[k].astype(np.int64 if k == "ids" else np.float32), 0 if k == "ids" else 2e-4) for k in vals]
    out += [("grad_" + k, s["g_" + k], g, 1e-3 * max(1.0, float(np.abs(g).max()))) for k, g in grads.items()]
    return out
