"""A float16 user: Sequential(Linear(dtype=float16) default init, Tanh, Linear(float16)) trained
by Adam(eps=1e-4: with the default 1e-8, which is 0 in fp16, torch's own fp16 Adam gives inf
at step 2, and so do we) and by SGD(momentum) for 8 steps over i; every parameter must stay float16 (API 3.7:
.grad has the parameter's dtype; torch.optim keeps fp16 state) and the losses track torch
float32 training from the same (fp16-rounded) initial weights within fp16 precision; plus
GRUCell(dtype=float16) / Conv1d(dtype=float16) default-initialised parameters are float16."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

N = 8


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import Linear, Sequential, Tanh, Conv1d
    from tempo.api.nn.rnn import GRUCell
    from tempo.api.optim.optim import Adam, SGD
    from tempo.core.dtype import dtypes
    h16 = dtypes.float16
    rng = np.random.default_rng(12)
    X = rng.normal(size=(6, 4)).astype(np.float16)
    Y = rng.normal(size=(6, 2)).astype(np.float16)
    s = {}
    out = []
    for opt_name in ["adam", "sgd"]:
        ctx = TempoContext(cfg, dim_names=("i",))
        ((i, I),) = ctx.variables_and_bounds
        with ctx:
            net = Sequential(Linear(4, 5, dtype=h16, domain=(i,)), Tanh(), Linear(5, 2, dtype=h16, domain=(i,)), domain=(i,))
            dts = [str(p.dtype) for p in net.parameters]
            loss = ((net(RT.const(X)) - RT.const(Y)) ** 2).mean()
            loss.backward()
            gdts = [str(p.grad.dtype) for p in net.parameters]
            (Adam(net.parameters, net.buffers, lr=0.05, eps=1e-4) if opt_name == "adam" else
             SGD(net.parameters, net.buffers, lr=0.1, momentum=0.9)).step()
            loss[0:I].sink_udf(grab(s, opt_name))
            for k, p in enumerate(net.parameters):
                p[0].sink_udf(grab(s, f"{opt_name}_p{k}"))
            extra = [str(p.dtype) for p in GRUCell(3, 2, dtype=h16).parameters + Conv1d(2, 2, 3, dtype=h16).parameters]
        ctx.compile({I: N}).execute()
        ps = [torch.tensor(s[f"{opt_name}_p{k}"].astype(np.float32)) for k in range(4)]
        tm = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
        with torch.no_grad():
            tm[0].weight.copy_(ps[0]); tm[0].bias.copy_(ps[1]); tm[2].weight.copy_(ps[2]); tm[2].bias.copy_(ps[3])
        to = torch.optim.Adam(tm.parameters(), lr=0.05, eps=1e-4) if opt_name == "adam" else torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9)
        if opt_name == "adam":   # fp16 Adam: compare with torch's own fp16 Adam (same underflows)
            tm = tm.half()
            to = torch.optim.Adam(tm.parameters(), lr=0.05, eps=1e-4)
        dt_ = torch.float16 if opt_name == "adam" else torch.float32
        ref = []
        for _ in range(N):
            lt = ((tm(torch.tensor(X).to(dt_)) - torch.tensor(Y).to(dt_)) ** 2).mean()
            ref.append(lt.item()); to.zero_grad(); lt.backward(); to.step()
        out += [(opt_name + "_loss", s[opt_name].astype(np.float32), np.array(ref, np.float32), 3e-2),
                (opt_name + "_param_dtypes", np.array(dts + gdts + extra), np.array(["half"] * (8 + len(extra))), 0)]
    return out


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        if a.dtype.kind in "UOb":
            print(r[0], "ok" if np.array_equal(a, b_) else ("BAD", a, b_)); continue
        err = np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64))) if a.shape == b_.shape else "SHAPE"
        print(r[0], err, "ok" if a.shape == b_.shape and err <= r[3] else "BAD")
