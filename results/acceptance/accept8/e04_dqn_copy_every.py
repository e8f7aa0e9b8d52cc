"""§6.4 ModelBuilder q-network + `copy_every` target network (never used by accept2-7): a DQN
learner over iterations i on a fixed transition table (batch-first (N, OBS) per i), online
net = ff encoder + ff hidden + q decoder, target = online.copy_every(num_steps=2, var=i)
(target[i] = online[i] at even i, held at odd i), TD target r + gamma (1 - done) max_a
target_q(next_obs) (max with dim, values only), q(s, a) by gather of the taken action,
Adam over i. Reference: torch MLPs with the same initial weights and torch.optim.Adam,
the target copied every 2 steps. Checks: losses, greedy actions, target q per i."""
import numpy as np
import torch

from common8 import Inits, np_of

I_, N, OBS, H, A = 5, 4, 3, 6, 2
GAMMA, LR = 0.9, 0.05


def data(seed=4):
    g = np.random.default_rng(seed)
    obs = g.normal(size=(I_, N, OBS)).astype(np.float32)
    nxt = g.normal(size=(I_, N, OBS)).astype(np.float32)
    act = g.integers(0, A, size=(I_, N)).astype(np.int64)
    rew = g.normal(size=(I_, N)).astype(np.float32)
    done = (g.random(size=(I_, N)) < 0.3).astype(np.float32)
    return obs, nxt, act, rew, done


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.optim.optim import Adam
    from tempo.api.rl.networks.model_builder import ModelBuilder

    obs, nxt, act, rew, done = data()
    inits = Inits(7)
    ctx = TempoContext(cfg, dim_names=("i",))
    ((i, I),) = ctx.variables_and_bounds
    st = {}
    with ctx:
        net = (ModelBuilder(domain=(i,), w_init_fun=inits).with_ff_encoder((OBS,), H)
               .with_ff_hidden([H]).with_qfun_decoder(A).build())
        w0 = list(inits.made)
        target = net.copy_every(num_steps=2, var=i)
        o = RT.const(obs).index(0, i)                                   # (N, OBS) over i
        o2 = RT.const(nxt).index(0, i)
        a = RT.const(act).index(0, i)
        r = RT.const(rew).index(0, i)
        d = RT.const(done).index(0, i)
        greedy, _ = net(o)
        q = net.qvalues()                                               # (N, A)
        q_sa = q.gather(1, a.unsqueeze(1)).squeeze(1)                   # (N,)
        target(o2)
        tq, _ = target.qvalues().max(dim=1)
        y = (r + GAMMA * (1.0 - d) * tq).detach()
        loss = ((q_sa - y) ** 2).mean()
        loss.backward()
        Adam(net.parameters, net.buffers, lr=LR).step()
        loss[0:I].sink_udf(lambda x: st.__setitem__("loss", np_of(x)))
        greedy[0:I].sink_udf(lambda x: st.__setitem__("greedy", np_of(x)))
        tq[0:I].sink_udf(lambda x: st.__setitem__("tq", np_of(x)))
    ctx.compile({I: I_}).execute()

    # torch: encoder Linear+tanh, hidden Linear+tanh, q head Linear; biases start at 0
    ws = [torch.tensor(w, requires_grad=True) for w in w0]
    bs = [torch.zeros(w.shape[0], requires_grad=True) for w in w0]
    params = [p for pair in zip(ws, bs) for p in pair]

    def mlp(x, W, B):
        h = torch.tanh(x @ W[0].T + B[0])
        h = torch.tanh(h @ W[1].T + B[1])
        return h @ W[2].T + B[2]
    opt = torch.optim.Adam(params, lr=LR)
    losses, greedys, tqs = [], [], []
    tW = tB = None
    for it in range(I_):
        if it % 2 == 0:
            tW = [w.detach().clone() for w in ws]; tB = [b.detach().clone() for b in bs]
        qv = mlp(torch.tensor(obs[it]), ws, bs)
        greedys.append(qv.argmax(-1).numpy())
        q_sa = qv.gather(1, torch.tensor(act[it]).unsqueeze(1)).squeeze(1)
        tq = mlp(torch.tensor(nxt[it]), tW, tB).max(dim=1).values
        tqs.append(tq.numpy())
        y = torch.tensor(rew[it]) + GAMMA * (1 - torch.tensor(done[it])) * tq
        loss = ((q_sa - y) ** 2).mean()
        losses.append(loss.item())
        opt.zero_grad(); loss.backward(); opt.step()
    return [("loss", st["loss"], np.array(losses, np.float32), 2e-5),
            ("greedy", st["greedy"], np.stack(greedys), 0),
            ("target_q", st["tq"], np.stack(tqs), 2e-5)]
