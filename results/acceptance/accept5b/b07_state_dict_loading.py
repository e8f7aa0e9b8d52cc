"""§3.3 init_from_statedict / §6.1 StateDictLoader with a user's own torch checkpoint:
a 3-block residual MLP saved by torch.save(model.state_dict()) in float64 AND in bfloat16
(what released checkpoints use); loaded with StateDictLoader.from_torch_checkpoint(path,
cfg, cast_to_dtype=float32).append('blocks').append(layer_symbol).load_tensor('weight') into
ONE Linear over a perm var (new_perm_var(3)), plus an un-symbolled key for the head; the
network's output vs torch's model (in float32, and the bf16-rounded weights for the bf16
file); init_from_statedict with a callable key; Module.state_dict/flat_state_dict keys,
parameters/buffers counts; fixed() holding parameters constant over an update dim i."""
import sys, os, tempfile
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

_C = {}
TAGS = ["m64", "mbf"]


def make():
    torch.manual_seed(4)
    m = torch.nn.ModuleDict({"blocks": torch.nn.ModuleList([torch.nn.Linear(6, 6) for _ in range(3)]),
                             "head": torch.nn.Linear(6, 2)})
    d = tempfile.mkdtemp(prefix="b07_")
    sd64 = {k: v.double() for k, v in m.state_dict().items()}
    sdbf = {k: v.to(torch.bfloat16) for k, v in m.state_dict().items()}
    torch.save(sd64, os.path.join(d, "m64.pt")); torch.save(sdbf, os.path.join(d, "mbf.pt"))
    return d, m


def ref(m, x, bf):
    with torch.no_grad():
        def w(l):
            return l.weight.to(torch.bfloat16).float() if bf else l.weight
        def b(l):
            return l.bias.to(torch.bfloat16).float() if bf else l.bias
        h = x
        for l in m["blocks"]:
            h = h + torch.tanh(h @ w(l).T + b(l))
        return h @ w(m["head"]).T + b(m["head"])


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import Linear
    from tempo.api.nn.state_loader import StateDictLoader
    from tempo.core.dtype import dtypes
    if "d" not in _C:
        _C["d"], _C["m"] = make()
    d, m = _C["d"], _C["m"]
    X = np.random.default_rng(0).normal(size=(5, 6)).astype(np.float32)
    s = {}
    out = []
    for tag in TAGS:
        ctx = TempoContext(cfg, dim_names=("i",))
        ((i, I),) = ctx.variables_and_bounds
        with ctx:
            lv, L = ctx.new_perm_var(3)
            ld = StateDictLoader.from_torch_checkpoint(os.path.join(d, tag + ".pt"), ctx.execution_config,
                                                       cast_to_dtype=dtypes.float32)
            blk = ld.append("blocks").append(lv)
            lin = Linear(6, 6, domain=(i,), independent_domain=(lv,), w_init_fun=blk.load_tensor("weight"),
                         b_init_fun=blk.load_tensor("bias"))
            hl = ld.append("head")
            head = Linear(6, 2, domain=(i,), w_init_fun=hl.load_tensor("weight"), b_init_fun=hl.load_tensor("bias"))
            lin.fixed(); head.fixed()
            h = RT.placeholder((5, 6), dtypes.float32, domain=(i, lv))
            h[i, 0] = RT.const(X)
            h[i, lv + 1] = h + lin(h).tanh()
            y = head(h[i, L - 1] + lin[i, L - 1](h[i, L - 1]).tanh())
            y[0:I].sink_udf(grab(s, tag))
            # init_from_statedict with a callable key over the layer var
            sd = torch.load(os.path.join(d, "m64.pt"))
            bias = RT.init_from_statedict(sd, lambda ts: f"blocks.{[v for k, v in ts.items() if getattr(k, 'name', '') == lv.name][0]}.bias",
                                          shape=(6,), dtype=dtypes.float32, domain=(lv,))
            bias[0:L].sink_udf(grab(s, tag + "_bias"))
            s[tag + "_keys"] = sorted(lin.flat_state_dict().keys()) + sorted(head.flat_state_dict().keys())
            s[tag + "_np"] = (len(lin.parameters), len(head.parameters), len(lin.buffers))
        ctx.compile({I: 2}).execute()
        r = ref(m, torch.tensor(X), tag == "mbf").numpy()
        out += [(tag + "_y", s[tag], np.stack([r, r]), 2e-5),
                (tag + "_bias", s[tag + "_bias"], np.stack([m["blocks"][k].bias.detach().numpy() for k in range(3)]), 1e-6),
                (tag + "_keys", np.array(s[tag + "_keys"]), np.array(["param_0", "param_1", "param_0", "param_1"]), 0),
                (tag + "_counts", np.array(s[tag + "_np"]), np.array((2, 2, 0)), 0)]
    return out


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        if a.dtype.kind in "UOb":
            print(r[0], "ok" if np.array_equal(a, b_) else ("BAD", a, b_)); continue
        err = np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64))) if a.shape == b_.shape else "SHAPE"
        print(r[0], err, "ok" if a.shape == b_.shape and err <= r[3] else "BAD")
