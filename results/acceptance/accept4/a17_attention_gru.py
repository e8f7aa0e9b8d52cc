"""§6.1 MultiHeadAttention (GQA 4 heads / 2 kv heads, bias, RoPE interleaved pairs) causal and
windowed over (b, t), vs a torch reference written from API.md's description; GRUCell over t
vs torch.nn.GRUCell (weights copied from ours: ih/hh Linear with torch's (r, z, n) layout);
clip_norm vs torch.nn.utils.clip_grad_norm_."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

B_, T_, E, NH, KV = 2, 5, 8, 4, 2

def rope_ref(x, pos, base=10000.0):
    # x (..., heads, hd): rotate interleaved pairs (x[2k], x[2k+1]) by pos * base^(-2k/hd)
    hd = x.shape[-1]
    k = torch.arange(0, hd, 2, dtype=torch.float64)
    ang = pos * base ** (-k / hd)
    c, s = torch.cos(ang), torch.sin(ang)
    x = x.double()
    a, b = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out.float()

def mha_ref(X, Wq, Wk, Wv, Wo, bq, bk, bv, bo, window=None, rope=True):
    Bn, Tn, _ = X.shape
    hd = E // NH
    out = torch.zeros(Bn, Tn, E)
    q = (X @ Wq.T + bq).reshape(Bn, Tn, NH, hd)
    k = (X @ Wk.T + bk).reshape(Bn, Tn, KV, hd)
    v = (X @ Wv.T + bv).reshape(Bn, Tn, KV, hd)
    if rope:
        q = torch.stack([rope_ref(q[:, j], j) for j in range(Tn)], 1)
        k = torch.stack([rope_ref(k[:, j], j) for j in range(Tn)], 1)
    k = k.repeat_interleave(NH // KV, dim=2); v = v.repeat_interleave(NH // KV, dim=2)
    for j in range(Tn):
        lo = 0 if window is None else max(0, j - window + 1)
        sc = torch.einsum("bhd,bshd->bhs", q[:, j], k[:, lo:j + 1]) / hd ** 0.5
        a = sc.softmax(-1)
        o = torch.einsum("bhs,bshd->bhd", a, v[:, lo:j + 1]).reshape(Bn, E)
        out[:, j] = o @ Wo.T + bo
    return out

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn.attention import MultiHeadAttention
    from tempo.api.nn.rnn import GRUCell
    from tempo.api.nn.utils import clip_norm
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(17)
    X = rng.normal(size=(B_, T_, E)).astype(np.float32)
    Ws = [rng.normal(size=s).astype(np.float32) * 0.4 for s in [(E, E), (KV * E // NH, E), (KV * E // NH, E), (E, E)]]
    Bs = [rng.normal(size=(s[0],)).astype(np.float32) * 0.1 for s in [(E,), (KV * E // NH,), (KV * E // NH,), (E,)]]
    ini = lambda a: (lambda shape, dtype, domain: RT.const(a))
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    s = {}
    with ctx:
        mha = MultiHeadAttention(E, NH, t, bias=True, apply_rope=True, num_kv_heads=KV,
                                 w_init_funs=[ini(w) for w in Ws], b_init_funs=[ini(x) for x in Bs])
        x = RT.const(X).index(0, b).index(0, t)
        mha.causal_forward(x)[0:B, 0:T].sink_udf(grab(s, "causal"))
        mha.windowed_forward(x, 3)[0:B, 0:T].sink_udf(grab(s, "win3"))
        # GRU over t
        gru = GRUCell(E, 3)
        h = RT.placeholder((3,), dtypes.float32, domain=(b, t))
        h[b, 0] = RT.zeros((3,))
        h1 = gru(x, h)
        h[b, t + 1] = h1
        h1[0:B, 0:T].sink_udf(grab(s, "gru"))
        gru.ih.w.sink_udf(grab(s, "g_wih")); gru.hh.w.sink_udf(grab(s, "g_whh"))
        gru.ih.b.sink_udf(grab(s, "g_bih")); gru.hh.b.sink_udf(grab(s, "g_bhh"))
        # clip_norm
        g1 = RT.const(rng.normal(size=(3, 2)).astype(np.float32) * 3)
        g2 = RT.const(rng.normal(size=(4,)).astype(np.float32) * 3)
        (c1, c2), tot = clip_norm([g1, g2], 2.5)
        c1.sink_udf(grab(s, "c1")); c2.sink_udf(grab(s, "c2")); tot.sink_udf(grab(s, "tot"))
        g1.sink_udf(grab(s, "g1")); g2.sink_udf(grab(s, "g2"))
    ctx.compile({B: B_, T: T_}).execute()
    tX = torch.tensor(X)
    W = [torch.tensor(w) for w in Ws]; Bb = [torch.tensor(x) for x in Bs]
    res = [("causal", s["causal"], mha_ref(tX, *W, *Bb), 2e-5),
           ("win3", s["win3"], mha_ref(tX, *W, *Bb, window=3), 2e-5)]
    tg = torch.nn.GRUCell(E, 3)
    with torch.no_grad():
        tg.weight_ih.copy_(torch.tensor(s["g_wih"])); tg.weight_hh.copy_(torch.tensor(s["g_whh"]))
        tg.bias_ih.copy_(torch.tensor(s["g_bih"])); tg.bias_hh.copy_(torch.tensor(s["g_bhh"]))
        hh = torch.zeros(B_, 3); hs = []
        for j in range(T_):
            hh = tg(tX[:, j], hh); hs.append(hh)
    res.append(("gru", s["gru"], torch.stack(hs, 1), 2e-5))
    p1 = torch.tensor(s["g1"]).clone().requires_grad_(); p2 = torch.tensor(s["g2"]).clone().requires_grad_()
    p1.grad = p1.detach().clone(); p2.grad = p2.detach().clone()
    tot = torch.nn.utils.clip_grad_norm_([p1, p2], 2.5)
    res += [("clip_tot", s["tot"], tot, 1e-4), ("clip1", s["c1"], p1.grad, 1e-4), ("clip2", s["c2"], p2.grad, 1e-4)]
    return res
