"""§6.1/§6.2: a causal MultiHeadAttention (GQA 4/2 heads, bias, RoPE) + RMSNorm + Linear head
whose parameters evolve along the training dim i (domain=(i,)) while the input sequence is over
t only (a fixed batch): loss = mean over t of (head(norm(x + mha(x))) - y)^2, trained by AdamW
(wd 0.01, max_norm 1.0) for 4 iterations, vs the same model written in torch (interleaved-pair
RoPE as API §6.1, repeat-interleaved KV heads) trained by torch.optim.AdamW + clip_grad_norm_."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

N, T_, E, H, KV = 4, 6, 8, 4, 2


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import Linear, MultiHeadAttention, RMSNorm
    from tempo.api.optim.optim import AdamW
    rng = np.random.default_rng(23)
    f = lambda *sh: (rng.normal(size=sh) * 0.4).astype(np.float32)
    hd = E // H
    Wq, Wk, Wv, Wo = f(E, E), f(KV * hd, E), f(KV * hd, E), f(E, E)
    bq, bk, bv, bo = f(E), f(KV * hd), f(KV * hd), f(E)
    Wh, bh = f(3, E), f(3)
    X, Y = f(T_, E) * 2, f(T_, 3)
    c = lambda a: (lambda shape, dtype, domain: RT.const(a))
    s = {}
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    with ctx:
        mha = MultiHeadAttention(E, H, t, bias=True, apply_rope=True, num_kv_heads=KV, domain=(i,),
                                 w_init_funs=[c(Wq), c(Wk), c(Wv), c(Wo)], b_init_funs=[c(bq), c(bk), c(bv), c(bo)])
        norm = RMSNorm(E, eps=1e-6, domain=(i,))
        head = Linear(E, 3, domain=(i,), w_init_fun=c(Wh), b_init_fun=c(bh))
        x = RT.const(X).index(0, t)
        out = head(norm(x + mha(x)))
        loss = ((out - RT.const(Y).index(0, t)) ** 2).mean()[i, 0:T].mean(0)
        loss.backward()
        params = mha.parameters + norm.parameters + head.parameters
        AdamW(params, [], lr=0.02, wd=0.01, max_norm=1.0).step()
        loss[0:I].sink_udf(grab(s, "loss"))
    ctx.compile({I: N, T: T_}).execute()
    # torch
    P = [torch.tensor(a, requires_grad=True) for a in (Wq, Wk, Wv, Wo, bq, bk, bv, bo, np.ones(E, np.float32), Wh, bh)]
    opt = torch.optim.AdamW(P, lr=0.02, weight_decay=0.01)
    fr = 1.0 / (10000.0 ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    ang = torch.arange(T_, dtype=torch.float64)[:, None] * fr[None]

    def rope(z):
        a, b_ = z[..., 0::2].double(), z[..., 1::2].double()
        cs, sn = ang.cos()[:, None], ang.sin()[:, None]
        return torch.stack([a * cs - b_ * sn, b_ * cs + a * sn], -1).reshape(z.shape).float()
    ref = []
    xt, yt = torch.tensor(X), torch.tensor(Y)
    for _ in range(N):
        q = rope((xt @ P[0].T + P[4]).view(T_, H, hd)); k = rope((xt @ P[1].T + P[5]).view(T_, KV, hd))
        v = (xt @ P[2].T + P[6]).view(T_, KV, hd)
        k, v = k.repeat_interleave(H // KV, 1), v.repeat_interleave(H // KV, 1)
        sc = torch.einsum("qhd,khd->hqk", q, k) / hd ** 0.5
        sc = sc.masked_fill(torch.triu(torch.ones(T_, T_, dtype=torch.bool), 1), float("-inf"))
        a = torch.einsum("hqk,khd->qhd", sc.softmax(-1), v).reshape(T_, E) @ P[3].T + P[7]
        o = torch.nn.functional.rms_norm(xt + a, (E,), P[8], 1e-6) @ P[9].T + P[10]
        lo = ((o - yt) ** 2).mean(); ref.append(lo.item())
        opt.zero_grad(); lo.backward(); torch.nn.utils.clip_grad_norm_(P, 1.0); opt.step()
    return [("loss", s["loss"], np.array(ref, np.float32), 2e-5)]


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        err = np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64)))
        print(r[0], a, b_, err, "ok" if err <= r[3] else "BAD")
