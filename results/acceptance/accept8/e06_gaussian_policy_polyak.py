"""§6.4 continuous policy decoder (NormalDistPiNetwork, squish=True, learned state-independent
log-sigma; used once before, without training) and `polyak_update(tau, update_freq)` of a
target network over iterations i: a REINFORCE-style loss on a fixed table of observations
and per-step weights, mean over a batch of N rows per iteration; actions sampled by the
network (recorded), log_prob summed over the action dims, entropy bonus, SGD(momentum=0.9,
nesterov=True) over i; target = a second builder network with
polyak_update(target, 0.5, update_var=i, update_freq=2). Reference: torch.distributions
.Normal with torch.optim.SGD(nesterov) replaying the recorded actions from the same initial
weights (read back at i = 0); the target's weights per i from a numpy recursion over the
online weights per i. Checks: losses, online head weights per i, target weights per i."""
import numpy as np
import torch

from common8 import Inits, np_of

I_, N, OBS, H, A = 5, 3, 4, 5, 2
LR = 0.05


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.optim.optim import SGD
    from tempo.api.rl.networks.model_builder import ModelBuilder

    g = np.random.default_rng(21)
    obs = g.normal(size=(I_, N, OBS)).astype(np.float32)
    score = g.normal(size=(I_, N)).astype(np.float32)
    inits = Inits(9)
    ctx = TempoContext(cfg, dim_names=("i",))
    ((i, I),) = ctx.variables_and_bounds
    st = {}

    def build():
        return (ModelBuilder(domain=(i,), w_init_fun=inits).with_ff_encoder(OBS, H)
                .with_continuous_pi_decoder(A, bias=True, squish=True)
                .with_no_second_decoder().build())
    with ctx:
        net = build()
        w0 = list(inits.made)
        target = build()
        net.polyak_update(target, 0.5, update_var=i, update_freq=2)
        o = RT.const(obs).index(0, i)
        act, _ = net(o)                                           # (N, A) sampled
        lp = net.log_prob(act.detach())                           # (N,)
        ent = net.entropy()                                       # (N,)
        loss = (-(lp * RT.const(score).index(0, i)) - 0.05 * ent).mean()
        loss.backward()
        SGD(net.parameters, net.buffers, lr=LR, momentum=0.9, nesterov=True).step()
        loss[0:I].sink_udf(lambda x: st.__setitem__("loss", np_of(x)))
        act[0:I].sink_udf(lambda x: st.__setitem__("act", np_of(x)))
        onl = net.flat_state_dict()
        tgt = target.flat_state_dict()
        names = list(onl.keys())
        for k in names:
            onl[k][0:I].sink_udf(lambda x, k=k: st.__setitem__("on." + k, np_of(x)))
            tgt[k][0:I].sink_udf(lambda x, k=k: st.__setitem__("tg." + k, np_of(x)))
    ctx.compile({I: I_}).execute()

    # torch: encoder Linear+tanh, mu = tanh(head), sigma = exp(log_sigma)
    enc_w = torch.tensor(w0[0], requires_grad=True); enc_b = torch.zeros(H, requires_grad=True)
    head_w = torch.tensor(w0[1], requires_grad=True); head_b = torch.zeros(A, requires_grad=True)
    log_sigma = torch.zeros(A, requires_grad=True)
    params = [enc_w, enc_b, head_w, head_b, log_sigma]
    opt = torch.optim.SGD(params, lr=LR, momentum=0.9, nesterov=True)
    losses, head_ws = [], []
    for it in range(I_):
        head_ws.append(head_w.detach().clone().numpy())
        h = torch.tanh(torch.tensor(obs[it]) @ enc_w.T + enc_b)
        mu = torch.tanh(h @ head_w.T + head_b)
        dist = torch.distributions.Normal(mu, log_sigma.exp().expand_as(mu))
        lp = dist.log_prob(torch.tensor(st["act"][it])).sum(-1)
        ent = dist.entropy().sum(-1)
        loss = (-(lp * torch.tensor(score[it])) - 0.05 * ent).mean()
        losses.append(loss.item())
        opt.zero_grad(); loss.backward(); opt.step()
    out = [("loss", st["loss"], np.array(losses, np.float32), 2e-5)]
    head_key = [k for k in names if st["on." + k].shape[1:] == (A, H)][0]
    out.append(("online head w per i", st["on." + head_key], np.stack(head_ws), 2e-5))
    for k in names:
        on, want = st["on." + k].astype(np.float64), np.zeros_like(st["tg." + k], np.float64)
        for u in range(I_):
            want[u] = on[0] if u == 0 else (0.5 * on[u] + 0.5 * want[u - 1] if u % 2 == 0
                                            else want[u - 1])
        out.append((f"target {k}", st["tg." + k], want, 1e-6))
    return out
