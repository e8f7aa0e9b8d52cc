"""§5 dtypes inside recurrences, with masked ops and reductions with keepdim, vs torch eager
in the same dtypes: a float16 recurrence h[t+1] = 0.5 h + x16 (rounding to half at every
step, as torch; a Python 0.5 would be float32 by API 5's implied dtypes, so the
scalar is a half const), a bfloat16 one, an int32 counter c[t+1] = where(x > 0, c + 2, c - 1) (int
arithmetic with a bool mask), a masked fill where(m, x, -inf) followed by max(dim=-1,
keepdim=True) (values and indices) and argmax(dim=0, keepdim=True), a masked mean
(sum(x*m, keepdim) / sum(m)), int cumsum along the slice of the counter c[0:t+1]
(accumulates in default_int: int64 on torch, int32 on jax/numpy), float16 + float32 -> float32 promotion, int32 + float16 -> float16, and
a cast of the half state to int (truncation). Checks: values and dtypes."""
import numpy as np
import torch

from common8 import np_of

T_, D = 5, 4


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core.dtype import dtypes

    g = np.random.default_rng(3)
    X = (g.normal(size=(T_, D)) * 3).astype(np.float32)
    M = g.random(size=(T_, D)) < 0.6
    M[:, 0] = True
    ctx = TempoContext(cfg, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    st = {}
    with ctx:
        x = RT.const(X).index(0, t)
        m = RT.const(M).index(0, t)
        h16 = RT.placeholder((D,), dtypes.float16, domain=(t,))
        h16[0] = x.cast(dtypes.float16)
        h16[True] = RT.const(0.5, dtype=dtypes.float16) * h16[t - 1] + x.cast(dtypes.float16)
        hb = RT.placeholder((D,), dtypes.bfloat16, domain=(t,))
        hb[0] = x.cast(dtypes.bfloat16)
        hb[True] = hb[t - 1] * RT.const(0.75, dtype=dtypes.bfloat16) + x.cast(dtypes.bfloat16)
        c = RT.placeholder((D,), dtypes.int32, domain=(t,))
        c[0] = RT.zeros((D,), dtypes.int32)
        c[True] = RT.where(x > 0, c[t - 1] + 2, c[t - 1] - 1)
        filled = RT.where(m, x, float("-inf"))
        mv, mi = filled.max(dim=-1, keepdim=True)
        csum = c[0:t + 1].cumsum(0)                                      # (t+1, D) int32
        clast = csum.index(0, t)
        am = c[0:t + 1].argmax(dim=0, keepdim=True)                      # (1, D)
        mf = m.cast(dtypes.float32)
        mmean = (x * mf).sum(-1, keepdim=True) / mf.sum(-1, keepdim=True)
        p1 = h16 + x                                                     # f16 + f32
        p2 = c + h16                                                     # i32 + f16
        trunc = h16.cast(dtypes.int32)
        for name, z in (("h16", h16), ("hb", hb), ("c", c), ("mv", mv), ("mi", mi),
                        ("clast", clast), ("am", am), ("mmean", mmean), ("p1", p1),
                        ("p2", p2), ("trunc", trunc)):
            z[0:T].sink_udf(lambda a, name=name: st.__setitem__(name, np_of(a)))
        dts = {"p1": p1.dtype, "p2": p2.dtype, "clast": clast.dtype, "trunc": trunc.dtype}
    ctx.compile({T: T_}).execute()

    Xt, Mt = torch.tensor(X), torch.tensor(M)
    h = [Xt[0].half()]; hbl = [Xt[0].bfloat16()]; cc = [torch.zeros(D, dtype=torch.int32)]
    for k in range(1, T_):
        h.append(0.5 * h[-1] + Xt[k].half())
        hbl.append(hbl[-1] * 0.75 + Xt[k].bfloat16())
        cc.append(torch.where(Xt[k] > 0, cc[-1] + 2, cc[-1] - 1))
    h, hbl, cc = torch.stack(h), torch.stack(hbl), torch.stack(cc)
    filled = torch.where(Mt, Xt, torch.tensor(float("-inf")))
    mv, mi = filled.max(dim=-1, keepdim=True)
    clast = torch.stack([cc[:k + 1].cumsum(0)[k] for k in range(T_)])
    am = torch.stack([cc[:k + 1].argmax(dim=0, keepdim=True) for k in range(T_)])
    mf = Mt.float()
    mmean = (Xt * mf).sum(-1, keepdim=True) / mf.sum(-1, keepdim=True)
    out = [("h16", st["h16"], h.numpy(), 0), ("bf16", st["hb"], hbl.float().numpy(), 0),
           ("c", st["c"], cc.numpy(), 0), ("masked max", st["mv"], mv.numpy(), 0),
           ("masked argmax", st["mi"], mi.numpy(), 0), ("int cumsum", st["clast"], clast.numpy(), 0),
           ("argmax keepdim over slice", st["am"], am.numpy(), 0),
           ("masked mean", st["mmean"], mmean.numpy(), 1e-6),
           ("f16+f32", st["p1"], (h.float() + Xt).numpy(), 1e-6),
           ("i32+f16", st["p2"], (cc + h).numpy(), 0),
           ("trunc", st["trunc"], h.int().numpy(), 0)]
    acc = "int64" if cfg.backend == "torch" else "int32"  # int cumsum accumulates in default_int
    want_dt = {"p1": "float32", "p2": "float16", "clast": acc, "trunc": "int32"}
    got_dt = {k: str(v) for k, v in dts.items()}
    names = {"float": "float32", "half": "float16", "int": "int32", "long": "int64"}
    got_dt = {k: names.get(v, v) for k, v in got_dt.items()}
    out.append(("dtypes", np.array(sorted(got_dt.items())), np.array(sorted(want_dt.items())), 0))
    out.append(("sink dtypes", np.array([str(st["p2"].dtype), str(st["clast"].dtype)]),
                np.array(["float16", acc]), 0))
    return out
