"""§6.4 ModelBuilder.with_cnn_encoder(convs, obs_shape) (never used by accept2-7) and
with_recurrent_ff_hidden (once before, forward only) trained over (i, t): each point holds
a batch of N = 2 images (N, 1, 5, 5); Conv2d(1, 2, 3) + relu, flatten, a recurrent hidden
layer h[t] = tanh(W x + U h[t-1] + b) along t (h[-1] = 0), a q decoder; loss = mean over
t of the squared error to a target, Adam over i (BPTT through the builder's recurrence).
Reference: torch conv2d + an RNN loop + linear from the initial weights read back at i = 0
(flat_state_dict), torch.optim.Adam. Checks: q at i = 0 for every t, the losses of all i."""
import numpy as np
import torch
import torch.nn.functional as F

from common8 import np_of

I_, T_, N, A = 3, 4, 2, 2
LR = 0.05


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.optim.optim import Adam
    from tempo.api.rl.networks.model_builder import ModelBuilder

    g = np.random.default_rng(17)
    imgs = g.normal(size=(I_, T_, N, 1, 5, 5)).astype(np.float32)
    tgt = g.normal(size=(I_, T_, N, A)).astype(np.float32)
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    st = {}
    with ctx:
        net = (ModelBuilder(domain=(i,)).with_cnn_encoder([(1, 2, 3, 1, 0, "relu")],
                                                          obs_shape=(1, 5, 5))
               .with_recurrent_ff_hidden([4]).with_qfun_decoder(A).build())
        obs = RT.const(imgs).index(0, i).index(0, t)                    # (N, 1, 5, 5)
        net(obs)
        q = net.qvalues()                                               # (N, A) over (i, t)
        err = ((q - RT.const(tgt).index(0, i).index(0, t)) ** 2).mean()
        loss = err[i, 0:T].mean()
        loss.backward()
        Adam(net.parameters, net.buffers, lr=LR).step()
        sd = net.flat_state_dict()
        names = list(sd)
        for k in names:
            sd[k][0].sink_udf(lambda x, k=k: st.__setitem__(k, np_of(x)))
        q[0, 0:T].sink_udf(lambda x: st.__setitem__("q0", np_of(x)))
        loss[0:I].sink_udf(lambda x: st.__setitem__("loss", np_of(x)))
    ctx.compile({I: I_, T: T_}).execute()

    P = {k: torch.tensor(st[k], requires_grad=True) for k in names}
    opt = torch.optim.Adam([P[k] for k in names], lr=LR)
    losses, q0 = [], None
    for it in range(I_):
        h = torch.zeros(N, 4)
        qs, errs = [], []
        for ti in range(T_):
            x = torch.tensor(imgs[it, ti])
            z = F.relu(F.conv2d(x, P["trunk.layers_0.conv.param_0"])
                       + P["trunk.layers_0.conv.param_1"]).flatten(1)
            pre = z @ P["trunk.layers_2.lin.param_0"].T + P["trunk.layers_2.lin.param_1"]
            h = torch.tanh(pre + (h @ P["trunk.layers_2.rec.param_0"].T if ti else 0.0))
            qv = h @ P["head.param_0"].T + P["head.param_1"]
            qs.append(qv)
            errs.append(((qv - torch.tensor(tgt[it, ti])) ** 2).mean())
        if it == 0:
            q0 = torch.stack(qs).detach().numpy()
        loss = torch.stack(errs).mean()
        losses.append(loss.item())
        opt.zero_grad(); loss.backward(); opt.step()
    return [("q at i=0", st["q0"], q0, 1e-5), ("loss", st["loss"], np.array(losses, np.float32), 2e-5)]
