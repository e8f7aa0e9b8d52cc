"""§7.10 boolean bounds in a policy-gradient learner with the usual normalisation: episodes of
iteration i end at the first t where the running cost exceeds a threshold ({T: (MAXT, done)});
returns-to-go G by a backward recurrence over the dynamic episode (G[i, T - 1] = r,
G = r + gamma G[i, t + 1]: the base case at the dynamic end), advantages normalised over
the episode A = (G - mean(G[i, 0:T])) / (std(G[i, 0:T]) + 1e-6) (std with correction 1:
divisor T - 1), a softmax policy over 3 actions from Linear(obs) with fixed recorded actions,
loss = -mean_t(A * log pi(a_t)) + 0.01 * logsumexp over the episode of the logits' max,
Adam over i (weights of iteration i from the gradient of i - 1, so the episode's end depends
on earlier losses). Reference: torch autograd + torch.optim.Adam per episode. Checks:
lengths, advantages of every episode, losses."""
import numpy as np
import torch

from common8 import Inits, grab_list, np_of

I_, MAXT, OBS, NA = 3, 7, 3, 3
GAMMA, LR, THR = 0.9, 0.05, 2.0


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import Adam
    from tempo.core.dtype import dtypes

    g = np.random.default_rng(31)
    X = g.normal(size=(I_, MAXT, OBS)).astype(np.float32)
    ACT = g.integers(0, NA, size=(I_, MAXT)).astype(np.int64)
    inits = Inits(5)
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    s = {}
    with ctx:
        pi = Linear(OBS, NA, domain=(i,), w_init_fun=inits)
        W0 = inits.made[0]
        x = RT.const(X).index(0, i).index(0, t)
        logits = pi(x)
        logp = logits - logits.logsumexp(0)
        a = RT.const(ACT).index(0, i).index(0, t)
        lp_a = logp.index(0, a)
        r = logp.exp().index(0, 0).detach() + 0.5                    # cost: prob of action 0
        acc = RT.placeholder((), dtypes.float32, domain=(i, t))
        acc[i, 0] = r
        acc[True] = acc[i, t - 1] + r
        done = acc > THR
        G = RT.placeholder((), dtypes.float32, domain=(i, t))
        G[i, T - 1] = r
        G[True] = r + GAMMA * G[i, t + 1]
        Gs = G[i, 0:T]
        A = (G - Gs.mean(0)) / (Gs.std(0) + 1e-6)
        mx, _ = logits.max(dim=0)
        loss = -(A.detach() * lp_a)[i, 0:T].mean(0) + 0.01 * mx[i, 0:T].logsumexp(0)
        loss.backward()
        Adam(pi.parameters, [], lr=LR).step()
        A.sink_udf(grab_list(s, "A"))
        loss[0:I].sink_udf(lambda v: s.__setitem__("loss", np_of(v)))
        (RT.from_symbol(i) + RT.from_symbol(t) * 0).sink_udf(grab_list(s, "ep"))
    ctx.compile({I: I_, T: (MAXT, done)}).execute()

    ep = np.array(s["ep"]).astype(int).ravel()
    lens = [int((ep == k).sum()) for k in range(I_)]
    Wt = torch.tensor(W0, requires_grad=True); bt = torch.zeros(NA, requires_grad=True)
    opt = torch.optim.Adam([Wt, bt], lr=LR)
    want_lens, As, losses = [], [], []
    for k in range(I_):
        logits = torch.tensor(X[k]) @ Wt.T + bt
        logp = torch.log_softmax(logits, -1)
        r = (logp.exp()[:, 0].detach() + 0.5)
        acc = torch.cumsum(r, 0).numpy()
        n = next((j + 1 for j in range(MAXT) if acc[j] > THR), MAXT)
        want_lens.append(n)
        G = torch.zeros(n)
        for j in reversed(range(n)):
            G[j] = r[j] + (GAMMA * G[j + 1] if j + 1 < n else 0.0)
        A = (G - G.mean()) / (G.std() + 1e-6)
        As.append(A.numpy())
        lp_a = logp[:n].gather(1, torch.tensor(ACT[k, :n]).unsqueeze(1)).squeeze(1)
        loss = -(A * lp_a).mean() + 0.01 * torch.logsumexp(logits[:n].max(-1).values, 0)
        losses.append(loss.item())
        opt.zero_grad(); loss.backward(); opt.step()
    return [("episode lengths", np.array(lens), np.array(want_lens), 0),
            ("advantages", np.array(s["A"], np.float64).ravel(), np.concatenate(As), 2e-5),
            ("loss", s["loss"], np.array(losses, np.float32), 2e-5)]
