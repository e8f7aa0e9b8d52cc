"""§6.1: LSTMCell(bias=False) unrolled over t with BPTT -- d(sum_t h_t . c_t)/d(weights, inputs)
vs torch.nn.LSTMCell; GRUCell(bias=False) one step + grads; MultiHeadAttention(dropout=0.4):
.eval() must equal the dropout-free output exactly, and in training mode the mean over 3000
fresh draws (a sample dim s in the input's domain) must be within 5 sigma of it (unbiased
inverted dropout); SwiGLU(bias=False) vs torch; Sequential.eval()/train() propagation."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

T_, S_ = 5, 3000


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import MultiHeadAttention, Sequential
    from tempo.api.nn.rnn import GRUCell, LSTMCell
    from tempo.api.nn.swiglu import SwiGLU
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(8)
    f = lambda *sh: (rng.normal(size=sh) * 0.4).astype(np.float32)
    X = f(T_, 3); Wih, Whh = f(16, 3), f(16, 4)
    Gih, Ghh, GX, GH = f(12, 3), f(12, 4), f(3), f(4)
    E = 8; Wq, Wk, Wv, Wo = f(E, E), f(E, E), f(E, E), f(E, E)
    XA = f(4, E)
    SW, SV = f(5, E), f(5, E)
    c = lambda a: (lambda shape, dtype, domain: RT.const(a))
    s = {}
    # rebuild cleanly with const inits (w_init_fun is shared by ih and hh, so pass per-Linear)
    ctx = TempoContext(cfg, dim_names=("s", "t"))
    (sv, S), (t, T) = ctx.variables_and_bounds
    with ctx:
        order = iter([Wih, Whh])
        lstm = LSTMCell(3, 4, bias=False, w_init_fun=lambda shape, dtype, domain: RT.const(next(order)))
        x = RT.const(X, requires_grad=True)
        h = RT.placeholder((4,), dtypes.float32, domain=(t,))
        cc = RT.placeholder((4,), dtypes.float32, domain=(t,))
        h[0] = RT.zeros((4,)); cc[0] = RT.zeros((4,))
        h2, c2 = lstm(x.index(0, t), (h, cc))
        h[t + 1] = h2; cc[t + 1] = c2
        loss = (h2 * c2).sum()[0:T].sum(0)
        loss.backward()
        loss.sink_udf(grab(s, "lstm_loss"))
        lstm.ih.w.grad.sink_udf(grab(s, "lstm_gih")); lstm.hh.w.grad.sink_udf(grab(s, "lstm_ghh"))
        x.grad.sink_udf(grab(s, "lstm_gx"))
        order2 = iter([Gih, Ghh])
        gru = GRUCell(3, 4, bias=False, w_init_fun=lambda shape, dtype, domain: RT.const(next(order2)))
        gh = gru(RT.const(GX), RT.const(GH))
        (gh * gh).sum().backward()
        gh.sink_udf(grab(s, "gru_h")); gru.hh.w.grad.sink_udf(grab(s, "gru_ghh"))
        mha = MultiHeadAttention(E, 2, t, dropout=0.4, w_init_funs=[c(Wq), c(Wk), c(Wv), c(Wo)])
        xa = RT.const(XA).index(0, t)
        xs = xa + RT.zeros((E,)) * RT.from_symbol(sv).cast(dtypes.float32)   # same values, domain (s, t)
        mha.eval()
        mha(xa)[0:T].sink_udf(grab(s, "mha_eval"))
        mha.train()
        mha(xs)[0:S, 0:T].mean(0).sink_udf(grab(s, "mha_train_mean"))
        mha(xs)[0:S, 0:T].std(0).sink_udf(grab(s, "mha_train_std"))
        sw = SwiGLU(E, 5, bias=False, w_init_fun=c(SW), v_init_fun=c(SV))
        seq = Sequential(sw)
        seq.eval(); s["seq_training"] = (seq.training, sw.training)
        sw(RT.const(XA)).sink_udf(grab(s, "swiglu"))
    ctx.compile({S: S_, T: 4}).execute()
    # torch
    tl = torch.nn.LSTMCell(3, 4, bias=False)
    with torch.no_grad():
        tl.weight_ih.copy_(torch.tensor(Wih)); tl.weight_hh.copy_(torch.tensor(Whh))
    tx = torch.tensor(X, requires_grad=True)
    hh, ccc = torch.zeros(1, 4), torch.zeros(1, 4); lo = 0
    for k in range(4):
        hh, ccc = tl(tx[k:k + 1], (hh, ccc)); lo = lo + (hh * ccc).sum()
    lo.backward()
    tg = torch.nn.GRUCell(3, 4, bias=False)
    with torch.no_grad():
        tg.weight_ih.copy_(torch.tensor(Gih)); tg.weight_hh.copy_(torch.tensor(Ghh))
    gho = tg(torch.tensor(GX)[None], torch.tensor(GH)[None])[0]; (gho * gho).sum().backward()
    tm = torch.nn.MultiheadAttention(E, 2, bias=False, batch_first=True)
    with torch.no_grad():
        tm.in_proj_weight.copy_(torch.tensor(np.concatenate([Wq, Wk, Wv]))); tm.out_proj.weight.copy_(torch.tensor(Wo))
    mask = torch.triu(torch.ones(4, 4, dtype=torch.bool), 1)
    ref = tm(torch.tensor(XA)[None], torch.tensor(XA)[None], torch.tensor(XA)[None], attn_mask=mask, need_weights=False)[0][0].detach().numpy()
    swr = (torch.nn.functional.silu(torch.tensor(XA) @ torch.tensor(SW).T) * (torch.tensor(XA) @ torch.tensor(SV).T)).numpy()
    sem = s["mha_train_std"] / np.sqrt(S_)
    z = np.abs(s["mha_train_mean"] - ref) / np.maximum(sem, 1e-6)
    return [("lstm_loss", s["lstm_loss"], lo.detach().numpy(), 1e-5), ("lstm_gih", s["lstm_gih"], tl.weight_ih.grad.numpy(), 1e-5),
            ("lstm_ghh", s["lstm_ghh"], tl.weight_hh.grad.numpy(), 1e-5), ("lstm_gx", s["lstm_gx"], tx.grad.numpy(), 1e-5),
            ("gru_h", s["gru_h"], gho.detach().numpy(), 1e-6), ("gru_ghh", s["gru_ghh"], tg.weight_hh.grad.numpy(), 1e-5),
            ("mha_eval", s["mha_eval"], ref, 1e-5), ("mha_train_unbiased_z", np.array(z.max() < 5.0), np.array(True), 0),
            ("mha_train_random", np.array(s["mha_train_std"].max() > 1e-3), np.array(True), 0),
            ("seq_eval", np.array(s["seq_training"]), np.array((False, False)), 0), ("swiglu", s["swiglu"], swr, 1e-5)]


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        if a.dtype.kind in "UOb":
            print(r[0], "ok" if np.array_equal(a, b_) else ("BAD", a, b_)); continue
        err = np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64))) if a.shape == b_.shape else "SHAPE"
        print(r[0], err, "ok" if a.shape == b_.shape and err <= r[3] else "BAD")
