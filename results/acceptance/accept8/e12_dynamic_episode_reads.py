"""§7.10 boolean bounds with every kind of read of the dynamic episode, weights trained from
the previous iteration's gradient (the pattern that exposed accept8's fusion bug): episodes
of iteration i end at the first t where the running sum of r = sigmoid(x . th) exceeds a
threshold; the episode's last value
r[i, T - 1] (a read at the dynamic end, from every t); discounted_cum_sum of r[i, 0:T]
(keep_symbolic_dim: back over t); the cumsum of r[i, 0:T] read at t; the episode mean and
max of r; loss = mean_t((ret - last)^2 * 0.1 + r * cum) + ep_max - ep_mean, SGD over
i written by the user (th[i] = th[i-1] - lr grad[i-1]). Reference: torch autograd per
episode. Checks: lengths, the per-step values of every episode, losses, th per i.
(A causal window r[i, max(0, t-2):t+1] in the loss is left out: its gradient under a
boolean bound is scheduled with T at its maximum -- repros/dynamic_episode_grad_reads.py
win, not fixed.)"""
import numpy as np
import torch

from common8 import grab_list, np_of

I_, MAXT, H = 3, 8, 3
GAMMA, LR, THR = 0.9, 0.2, 2.2


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core.dtype import dtypes

    g = np.random.default_rng(41)
    X = g.normal(size=(I_, MAXT, H)).astype(np.float32)
    th0 = (g.normal(size=(H,)) * 0.5).astype(np.float32)
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    s = {}
    with ctx:
        th = RT.placeholder((H,), dtypes.float32, domain=(i,), requires_grad=True)
        r = (RT.const(X).index(0, i).index(0, t) * th).sum().sigmoid()
        acc = RT.placeholder((), dtypes.float32, domain=(i, t))
        acc[i, 0] = r
        acc[True] = acc[i, t - 1] + r
        done = acc > THR
        last = r[i, T - 1]
        ret = r[i, 0:T].discounted_cum_sum(GAMMA, dim=0)
        cum = r[i, 0:T].cumsum(0).index(0, t)
        ep_mean = r[i, 0:T].mean(0)
        ep_max, _ = r[i, 0:T].max(dim=0)
        per = (ret - last) ** 2 * 0.1 + r * cum
        loss = per[i, 0:T].mean(0) + ep_max - ep_mean
        loss.backward()
        th[0] = RT.const(th0)
        th[True] = th[i - 1].detach() - LR * th.grad[i - 1]
        per.sink_udf(grab_list(s, "per"))
        loss[0:I].sink_udf(lambda v: s.__setitem__("loss", np_of(v)))
        th[0:I].sink_udf(lambda v: s.__setitem__("th", np_of(v)))
        (RT.from_symbol(i) + RT.from_symbol(t) * 0).sink_udf(grab_list(s, "ep"))
    ctx.compile({I: I_, T: (MAXT, done)}).execute()

    ep = np.array(s["ep"]).astype(int).ravel()
    lens = [int((ep == k).sum()) for k in range(I_)]
    tht = torch.tensor(th0, requires_grad=True)
    want_lens, pers, losses, ths = [], [], [], []
    for k in range(I_):
        ths.append(tht.detach().clone().numpy())
        r = torch.sigmoid(torch.tensor(X[k]) @ tht)
        acc = torch.cumsum(r.detach(), 0).numpy()
        n = next((j + 1 for j in range(MAXT) if acc[j] > THR), MAXT)
        want_lens.append(n)
        r = r[:n]
        ret = torch.stack([sum(GAMMA ** m * r[j + m] for m in range(n - j)) for j in range(n)])
        per = (ret - r[n - 1]) ** 2 * 0.1 + r * torch.cumsum(r, 0)
        pers.append(per.detach().numpy())
        loss = per.mean() + r.max() - r.mean()
        losses.append(loss.item())
        (gr,) = torch.autograd.grad(loss, [tht])
        tht = (tht.detach() - LR * gr).requires_grad_(True)
    return [("episode lengths", np.array(lens), np.array(want_lens), 0),
            ("per-step values", np.array(s["per"], np.float64).ravel(), np.concatenate(pers), 2e-5),
            ("loss", s["loss"], np.array(losses, np.float32), 2e-5),
            ("th", s["th"], np.stack(ths), 2e-5)]
