"""An n-step TD critic as a user writes it from windows over time, with episode ends inside
the window: for each (b, t), G = sum_k gamma^k alive_k r[t+k] over the window
r[b, t:min(t+N, T)] (alive_k = prod_{j<k} (1 - done[t+j]): an exclusive cumprod, the
inclusive one shifted by a cat of 1 and a slice of symbolic length), plus gamma^N alive_N v[b, t+N] (detached) where t + N < T; the critic v = Linear(obs) over
(b, t); loss = mean (v - G)^2; one backward and 3 SGD steps over iterations i. Reference:
torch eager loops with the same weights. Checks G, the losses and the weights per i."""
import numpy as np
import torch

from common7 import np_of

I_, B_, T_, N, OBS = 3, 2, 7, 3, 4
GAMMA, LR = 0.9, 0.05


def data(seed=2):
    g = np.random.default_rng(seed)
    obs = g.normal(size=(B_, T_, OBS)).astype(np.float32)
    rew = g.normal(size=(B_, T_)).astype(np.float32)
    done = (g.random(size=(B_, T_)) < 0.25).astype(np.float32)
    w0 = (g.normal(size=(1, OBS)) * 0.3).astype(np.float32)
    return obs, rew, done, w0


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import SGD
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes

    obs, rew, done, w0 = data()
    ctx = TempoContext(cfg, dim_names=("i", "b", "t"))
    (i, I), (b, B), (t, T) = ctx.variables_and_bounds
    st = {}
    with ctx:
        critic = Linear(OBS, 1, domain=(i,), w_init_fun=lambda shape, dtype, domain: RT.const(w0))
        o = RT.const(obs).index(0, b).index(0, t)
        r = RT.placeholder((), dtypes.float32, domain=(b, t))
        r[True] = RT.const(rew).index(0, b).index(0, t)
        d = RT.placeholder((), dtypes.float32, domain=(b, t))
        d[True] = RT.const(done).index(0, b).index(0, t)
        v = critic(o).reshape(())                                  # (i, b, t)
        end = ie.min(t + N, T)
        rw = r[b, t:end]                                           # (L,)
        dw = d[b, t:end]
        keep_incl = (1.0 - dw).cumprod(0)                          # prod_{j<=k}
        alive = RT.cat(RT.ones((1,)), keep_incl, dim=0).slice_dim(0, 0, end - t)  # prod_{j<k}
        disc = GAMMA ** RT.arange(end - t).cast(dtypes.float32)
        G_r = (disc * alive * rw).sum(0)
        alive_n = keep_incl.index(0, end - t - 1)
        boot = RT.placeholder((), dtypes.float32, domain=(i, b, t))
        with ctx.when(t + N < T):
            boot[True] = (GAMMA ** N) * alive_n * v[i, b, ie.min(t + N, T - 1)].detach()
        boot[True] = RT.const(0.0)
        G = G_r + boot
        loss = ((v - G) ** 2)[i, 0:B, 0:T].mean()
        loss.backward()
        SGD(critic.parameters, [], lr=LR).step()
        G[0, 0:B, 0:T].sink_udf(lambda x: st.__setitem__("G0", np_of(x)))
        loss[0:I].sink_udf(lambda x: st.__setitem__("loss", np_of(x)))
        critic.w[0:I].sink_udf(lambda x: st.__setitem__("w", np_of(x)))
    ctx.compile({I: I_, B: B_, T: T_}).execute()

    w = torch.tensor(w0, requires_grad=True); bb = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([w, bb], lr=LR)
    losses, ws, G0 = [], [], None
    X = torch.tensor(obs)
    for it in range(I_):
        ws.append(w.detach().clone().numpy())
        v = (X @ w.T + bb)[..., 0]                                # (B, T)
        vd = v.detach()
        G = torch.zeros(B_, T_)
        for bi in range(B_):
            for ti in range(T_):
                acc, alive = 0.0, 1.0
                for k in range(N):
                    if ti + k >= T_:
                        break
                    acc += GAMMA ** k * alive * float(rew[bi, ti + k])
                    alive *= 1.0 - float(done[bi, ti + k])
                if ti + N < T_:
                    acc += GAMMA ** N * alive * float(vd[bi, ti + N])
                G[bi, ti] = acc
        if it == 0:
            G0 = G.numpy().copy()
        loss = ((v - G) ** 2).mean()
        losses.append(loss.item())
        opt.zero_grad(); loss.backward(); opt.step()
    return [("G0", st["G0"], G0, 1e-5), ("loss", st["loss"], np.array(losses, np.float32), 1e-5),
            ("w", st["w"], np.stack(ws), 1e-5)]
