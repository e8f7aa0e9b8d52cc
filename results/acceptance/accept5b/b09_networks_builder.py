"""§6.4 ModelBuilder / Network: a continuous actor-critic (ff encoder 4->6 tanh, ff hidden 5
with relu, Gaussian head squish=True for action_shape (2,), value head) on a (3, 4) batch:
action shape, value, log_prob(actions) and entropy (summed over the action dims) vs a torch
replica with the same weights (w_init_fun records every weight it makes); a recurrent hidden
layer (with_recurrent_ff_hidden) over t vs a numpy RNN loop; a QNetwork's argmax/qvalues; and
polyak_update(tau=0.3, update_freq=2) of a target over the update dim i, against a numpy
recurrence, with the online parameters moved by hand each step (p[i] = p[i-1] + 1)."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.rl.networks.model_builder import ModelBuilder
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(21)
    made = []

    def winit(shape, dtype=None, domain=None):
        a = (rng.normal(size=tuple(int(d) for d in shape)) * 0.6).astype(np.float32)
        made.append(a)
        return RT.const(a)
    OBS = rng.normal(size=(3, 4)).astype(np.float32)
    ACT = rng.normal(size=(3, 2)).astype(np.float32)
    XS = rng.normal(size=(5, 1, 4)).astype(np.float32)
    s = {}
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    with ctx:
        net = (ModelBuilder(w_init_fun=winit).with_ff_encoder((4,), 6).with_ff_hidden([5], activation_fun="relu")
               .with_continuous_pi_decoder(2, squish=True).with_vfun_decoder().build())
        n_made = len(made)
        a, v = net(RT.const(OBS))
        s["a_shape"] = tuple(a.shape)
        v.sink_udf(grab(s, "v"))
        net.log_prob(RT.const(ACT)).sink_udf(grab(s, "lp"))
        net.entropy().sink_udf(grab(s, "ent"))
        made_rec0 = len(made)
        rnet = (ModelBuilder(w_init_fun=winit).with_ff_encoder((4,), 3).with_recurrent_ff_hidden([3], time_var=t)
                .with_vfun_decoder_only().build())
        rv, _ = rnet(RT.const(XS).index(0, t))
        rv[0:T].sink_udf(grab(s, "rv"))
        made_q0 = len(made)
        q = ModelBuilder(domain=(i,), w_init_fun=winit).with_ff_encoder((4,), 3).with_qfun_decoder(3).build()
        tq = ModelBuilder(domain=(i,), w_init_fun=winit).with_ff_encoder((4,), 3).with_qfun_decoder(3).build()
        for p in q.parameters:
            p[True] = p[i - 1] + 1.0
        q.polyak_update(tq, 0.3, update_freq=2)
        qa, _ = q(RT.const(OBS))
        qa[0:I].sink_udf(grab(s, "qa")); q.qvalues()[0:I].sink_udf(grab(s, "qv"))
        tq.parameters[0][0:I].sink_udf(grab(s, "tq_w0"))
    ctx.compile({I: 5, T: 5}).execute()
    # torch replica of the actor-critic (creation order: encoder, hidden, value head, pi head)
    W = [torch.tensor(m) for m in made]
    enc_w, hid_w, v_w, pi_w = W[0], W[1], W[2], W[3]
    ob = torch.tensor(OBS)
    z = torch.tanh(ob @ enc_w.T)            # biases start at zero
    z = torch.relu(z @ hid_w.T)
    mu = torch.tanh(z @ pi_w.T)
    val = (z @ v_w.T).reshape(3)
    dist = torch.distributions.Normal(mu, torch.ones(2))
    lp = dist.log_prob(torch.tensor(ACT)).sum(1)
    ent = dist.entropy().sum(1)
    # recurrent net: encoder, rec lin, rec U, value head
    e_w, r_w, r_u, rv_w = made[made_rec0:made_rec0 + 4]
    h = np.zeros((1, 3), np.float32); rvs = []
    for k in range(5):
        x = np.tanh(XS[k] @ e_w.T)
        h = np.tanh(x @ r_w.T + (h @ r_u.T if k else 0))
        rvs.append((h @ rv_w.T).reshape(1))
    qw0, qhead = made[made_q0], made[made_q0 + 1]
    tw0 = made[made_q0 + 2]
    qvs, tws = [], []
    tgt = None
    for k in range(5):
        w0, wh = qw0 + k, qhead + k          # every parameter (biases too) moves by +1 per i
        zz = np.tanh(OBS @ w0.T + k)
        qvs.append(zz @ wh.T + k)
        if k == 0:
            tgt = qw0.copy()
        elif k % 2 == 0:
            tgt = 0.3 * w0 + 0.7 * tgt
        tws.append(tgt.copy())
    qvs = np.array(qvs)
    return [("a_shape", np.array(s["a_shape"]), np.array((3, 2)), 0), ("n_weights", np.array(n_made), np.array(4), 0),
            ("value", s["v"], val.numpy(), 1e-5), ("log_prob", s["lp"], lp.numpy(), 1e-5), ("entropy", s["ent"], ent.numpy(), 1e-5),
            ("rnn_value", s["rv"], np.array(rvs, np.float32), 1e-5), ("q_values", s["qv"], qvs.astype(np.float32), 1e-4),
            ("q_argmax", s["qa"], qvs.argmax(-1).astype(s["qa"].dtype), 0), ("polyak_w0", s["tq_w0"], np.array(tws, np.float32), 1e-5)]


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        err = np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64))) if a.shape == b_.shape else "SHAPE"
        print(r[0], a.shape, b_.shape, err, "ok" if a.shape == b_.shape and err <= r[3] else "BAD")
