"""§7.10 dynamic bounds with suffix reductions and gradients: over (i, t), an episode of
iteration i ends at the first t where the running reward sum exceeds a threshold ({T: (MAXT,
done)}: a different length per i); rewards r = sigmoid(x . theta) (x from a table; a leaf
theta updated by SGD over i), returns-to-go G[i, t] = sum_k gamma^k r[i, t+k] over the
SUFFIX r[i, t:T] to the dynamic bound (gamma ** arange(T - t), a slice whose length depends
on t and on the episode's own end), loss = -mean over the episode of G * (x . phi) (phi a
second leaf, G detached) + mean (r - 0.5)^2; plain gradient steps over i written by the user
(p[i+1] = p - lr * grad). Reference: numpy episode lengths, torch autograd per iteration.
Checks: episode lengths, G of every episode, losses, theta per i."""
import numpy as np
import torch

from common8 import grab_list, np_of

I_, MAXT, H = 3, 8, 3
GAMMA, LR, THR = 0.8, 0.3, 1.6


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core.dtype import dtypes

    g = np.random.default_rng(23)
    X = g.normal(size=(I_, MAXT, H)).astype(np.float32)
    th0 = (g.normal(size=(H,)) * 0.5).astype(np.float32)
    ph0 = (g.normal(size=(H,)) * 0.5).astype(np.float32)
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    s = {}
    with ctx:
        th = RT.placeholder((H,), dtypes.float32, domain=(i,), requires_grad=True)
        ph = RT.placeholder((H,), dtypes.float32, domain=(i,), requires_grad=True)
        x = RT.const(X).index(0, i).index(0, t)
        r = ((x * th).sum()).sigmoid()
        acc = RT.placeholder((), dtypes.float32, domain=(i, t))
        acc[i, 0] = r
        acc[True] = acc[i, t - 1] + r
        done = acc > THR
        G = (GAMMA ** RT.arange(T - t).cast(dtypes.float32) * r[i, t:T]).sum(0)
        per = -G.detach() * (x * ph).sum() + (r - 0.5) ** 2
        loss = per[i, 0:T].mean(0)
        loss.backward()
        th[0] = RT.const(th0)
        th[True] = th[i - 1].detach() - LR * th.grad[i - 1]
        ph[0] = RT.const(ph0)
        ph[True] = ph[i - 1].detach() - LR * ph.grad[i - 1]
        loss[0:I].sink_udf(lambda v: s.__setitem__("loss", np_of(v)))
        th[0:I].sink_udf(lambda v: s.__setitem__("th", np_of(v)))
        G.sink_udf(grab_list(s, "G"))
        (RT.from_symbol(i) + RT.from_symbol(t) * 0).sink_udf(grab_list(s, "ep"))
    ctx.compile({I: I_, T: (MAXT, done)}).execute()

    ep = np.array(s["ep"]).astype(int).ravel()
    lens = [int((ep == k).sum()) for k in range(I_)]
    Gs = np.array(s["G"], np.float64).ravel()
    th_t = torch.tensor(th0, requires_grad=True)
    ph_t = torch.tensor(ph0, requires_grad=True)
    want_lens, want_G, losses, ths = [], [], [], []
    for k in range(I_):
        ths.append(th_t.detach().clone().numpy())
        Xk = torch.tensor(X[k])
        r = torch.sigmoid(Xk @ th_t)
        acc = torch.cumsum(r.detach(), 0).numpy()
        L = next((n + 1 for n in range(MAXT) if acc[n] > THR), MAXT)
        want_lens.append(L)
        r = r[:L]
        G = torch.stack([sum(GAMMA ** j * r[n + j] for j in range(L - n)) for n in range(L)])
        want_G.append(G.detach().numpy())
        loss = (-G.detach() * (Xk[:L] @ ph_t) + (r - 0.5) ** 2).mean()
        losses.append(loss.item())
        gth, gph = torch.autograd.grad(loss, [th_t, ph_t])
        with torch.no_grad():
            th_t = (th_t - LR * gth).requires_grad_(True)
            ph_t = (ph_t - LR * gph).requires_grad_(True)
    return [("episode lengths", np.array(lens), np.array(want_lens), 0),
            ("G", Gs, np.concatenate(want_G), 1e-5),
            ("loss", s["loss"], np.array(losses, np.float32), 1e-5),
            ("theta", s["th"], np.stack(ths), 1e-5)]
