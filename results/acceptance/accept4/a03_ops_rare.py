"""§3.8 less common ops over a time dim, vs numpy/torch: cumprod with zeros/negatives, stable sort
(desc), logsumexp, l_norm, std(correction), max/min(dim), argmin, discounted_sum (§7.4),
discounted_cum_sum (keep_symbolic_dim), repeat (short list right-padded), repeat_interleave,
chunk, unflatten, dilate, pad reflect/replicate, index_many, index_add, scatter_add, module
scatter, gather, one_hot, log_base, exp2/exp10, erf, floor_div/remainder on negatives, trunc/round,
normalize, elu/leakyrelu/softplus(beta)/mish, cross_entropy, flip, split, cat/stack, where."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    import tempo.api.recurrent_tensor as tpo
    from tempo.core.dtype import dtypes
    T_ = 3
    rng = np.random.default_rng(0)
    X = rng.normal(size=(T_, 4, 5)).astype(np.float32)
    X[1, 0, 2] = 0.0
    X[2, 1, :] = [1.0, 1.0, 2.0, 2.0, 1.0]  # ties for stable sort
    IDX = np.array([[0, 2, 1, 4, 3], [1, 1, 0, 0, 2], [4, 3, 2, 1, 0], [2, 2, 2, 2, 2]], np.int64)
    PERM = np.array([[0, 2, 1, 4, 3], [1, 0, 3, 2, 4], [4, 3, 2, 1, 0], [2, 3, 4, 0, 1]], np.int64)
    ctx = TempoContext(cfg, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    s = {}
    dint = None
    with ctx:
        dint = dtypes.default_int
        xs = RT.const(X)               # (T,4,5) constant, read at t
        x = xs.index(0, t)              # point value (4,5) over t
        idx = RT.const(IDX).cast(dint)
        outs = {
            "cumprod": x.cumprod(1),
            "sort_v": x.sort(1, descending=True, stable=True)[0],
            "sort_i": x.sort(1, descending=True, stable=True)[1],
            "lse": x.logsumexp(1),
            "lse_kd": tpo.logsumexp(x, sum_dims=(0, 1), keepdim=True),
            "l1": x.l_norm(1, dims=1),
            "l3": x.l_norm(3),
            "std0": x.std(1, correction=0),
            "std1": x.std(1),
            "maxv": x.max(0)[0], "maxi": x.max(0)[1],
            "min_all": x.min(),
            "argmin": x.argmin(1),
            "dsum": x.discounted_sum(0.9, 1),
            "rep": x.repeat(2),
            "rep3": x.repeat((2, 1, 2)),
            "repi": x.repeat_interleave(2, 1),
            "chunk1": x.chunk(5, 1)[1],
            "unflat": x.reshape((20,)).unflatten(0, (2, 10)),
            "dil": x.dilate((2, 3)),
            "pad_ref": x.pad(((1, 1), (2, 1)), mode="reflect"),
            "pad_rep": x.pad(((1, 0), (0, 2)), mode="replicate"),
            "pad_c": x.pad_dim((1, 2), 1, value=7.0),
            "imany": x.index_many([RT.const(np.array([3, 0])).cast(dint), None]),
            "iadd": x.index_add(1, RT.const(np.array([0, 2, 0])).cast(dint), RT.ones((4, 3)), alpha=2.0),
            "scadd": x.scatter_add(1, idx, x * 2.0),
            "scatter_mod": tpo.scatter(1, RT.const(PERM).cast(dint), x * 1.0),
            "gather": x.gather(1, idx),
            "onehot": tpo.one_hot(RT.const(np.array([0, 3, 1])).cast(dint), 4),
            "logb": tpo.log_base(3.0, x.abs() + 1.0),
            "exp2": x.exp2(), "exp10": (x * 0.3).exp10(), "erf": x.erf(),
            "fdiv": (x * 3.0) // 2.0, "rem": (x * 3.0) % 2.0, "irem": RT.const(np.array([-7, 7, -3])).cast(dint) % 3,
            "ifdiv": RT.const(np.array([-7, 7, -3])).cast(dint) // 2,
            "trunc": (x * 2.5).trunc(), "round": (x * 2.5).round(),
            "norm": tpo.normalize(x, 0.5, 2.0),
            "elu": x.elu(0.7), "lrelu": x.leakyrelu(0.2), "softplus": x.softplus(2.0), "mish": x.mish(),
            "xent": tpo.cross_entropy(x.softmax(1), (x * 0.0 + 0.2), class_dim=1),
            "flip": x.flip((0, 1)), "split": x.split(1, 5)[3],
            "cat": RT.cat(x, x * 2.0, dim=1), "stack": RT.stack([x, x + 1.0], dim=0),
            "where": (x > 0).where(x, x * 0.1),
            "clip": x.clip(-0.5, 0.3), "maximum": tpo.maximum(x, 0.2),
            "ne": x != 0.0,
        }
        for k, v in outs.items():
            (v[0:T] if t in v.domain else v).sink_udf(grab(s, k))
        dcs = xs.index(0, t).sum(1).sum(0)  # scalar per t
        dcs[0:T].discounted_cum_sum(0.5)[0:T].sink_udf(grab(s, "dcs"))
    ctx.compile({T: T_}).execute()
    tx = torch.tensor(X)
    ti = torch.tensor(IDX)
    def per_t(fn):
        return torch.stack([fn(tx[k]) for k in range(T_)])
    ref = {
        "cumprod": per_t(lambda a: a.cumprod(1)),
        "sort_v": per_t(lambda a: torch.sort(a, dim=1, descending=True, stable=True)[0]),
        "sort_i": per_t(lambda a: torch.sort(a, dim=1, descending=True, stable=True)[1]),
        "lse": per_t(lambda a: a.logsumexp(1)),
        "lse_kd": per_t(lambda a: a.logsumexp((0, 1), keepdim=True)),
        "l1": per_t(lambda a: a.norm(1, dim=1)),
        "l3": per_t(lambda a: a.norm(3)),
        "std0": per_t(lambda a: a.std(1, correction=0)),
        "std1": per_t(lambda a: a.std(1)),
        "maxv": per_t(lambda a: a.max(0)[0]), "maxi": per_t(lambda a: a.max(0)[1]),
        "min_all": per_t(lambda a: a.min()),
        "argmin": per_t(lambda a: a.argmin(1)),
        "dsum": per_t(lambda a: (a * (0.9 ** torch.arange(5.0))).sum(1)),
        "rep": per_t(lambda a: a.repeat(2, 1)),
        "rep3": per_t(lambda a: a.repeat(2, 1, 2)),
        "repi": per_t(lambda a: a.repeat_interleave(2, 1)),
        "chunk1": per_t(lambda a: a.chunk(5, 1)[1]),
        "unflat": per_t(lambda a: a.reshape(20).unflatten(0, (2, 10))),
        "dil": per_t(lambda a: torch.zeros(7, 13).index_put_((torch.arange(4)[:, None] * 2, torch.arange(5)[None] * 3), a)),
        "pad_ref": per_t(lambda a: torch.nn.functional.pad(a[None, None], (2, 1, 1, 1), mode="reflect")[0, 0]),
        "pad_rep": per_t(lambda a: torch.nn.functional.pad(a[None, None], (0, 2, 1, 0), mode="replicate")[0, 0]),
        "pad_c": per_t(lambda a: torch.nn.functional.pad(a, (1, 2), value=7.0)),
        "imany": per_t(lambda a: a[[3, 0]]),
        "iadd": per_t(lambda a: a.index_add(1, torch.tensor([0, 2, 0]), torch.ones(4, 3), alpha=2.0)),
        "scadd": per_t(lambda a: a.scatter_add(1, ti, a * 2.0)),
        "gather": per_t(lambda a: a.gather(1, ti)),
        "onehot": (torch.nn.functional.one_hot(torch.tensor([0, 3, 1]), 4) == 1).long(),
        "logb": per_t(lambda a: torch.log(a.abs() + 1) / np.log(3.0)),
        "exp2": per_t(torch.exp2), "exp10": per_t(lambda a: 10 ** (a * 0.3)), "erf": per_t(torch.erf),
        "fdiv": per_t(lambda a: torch.floor_divide(a * 3, 2.0)), "rem": per_t(lambda a: torch.remainder(a * 3, 2.0)),
        "irem": torch.remainder(torch.tensor([-7, 7, -3]), 3),
        "ifdiv": torch.floor_divide(torch.tensor([-7, 7, -3]), 2),
        "trunc": per_t(lambda a: (a * 2.5).trunc()), "round": per_t(lambda a: (a * 2.5).round()),
        "norm": per_t(lambda a: (a - 0.5) / (2.0 + 1e-8)),
        "elu": per_t(lambda a: torch.nn.functional.elu(a, 0.7)), "lrelu": per_t(lambda a: torch.nn.functional.leaky_relu(a, 0.2)),
        "softplus": per_t(lambda a: torch.nn.functional.softplus(a, 2.0)), "mish": per_t(torch.nn.functional.mish),
        "xent": per_t(lambda a: -(0.2 * a.softmax(1).log()).sum(1)),
        "flip": per_t(lambda a: a.flip((0, 1))), "split": per_t(lambda a: a.split(1, 1)[3]),
        "cat": per_t(lambda a: torch.cat([a, a * 2], 1)), "stack": per_t(lambda a: torch.stack([a, a + 1], 0)),
        "where": per_t(lambda a: torch.where(a > 0, a, a * 0.1)),
        "clip": per_t(lambda a: a.clip(-0.5, 0.3)), "maximum": per_t(lambda a: torch.maximum(a, torch.tensor(0.2))),
        "ne": per_t(lambda a: a != 0),
    }
    # module scatter(dim, index, src): scatter into zeros of src's shape
    ref["scatter_mod"] = per_t(lambda a: torch.zeros_like(a).scatter(1, torch.tensor(PERM), a))
    sums = X.sum((1, 2))
    ref["dcs"] = torch.tensor([sum(0.5 ** (j - k) * sums[j] for j in range(k, T_)) for k in range(T_)])
    res = []
    for k, v in ref.items():
        if k == "scatter_mod":
            # index values are > 0 for some rows: out-of-range for a (4,1) target; compare only rows with idx 0
            pass
        tol = 1e-4 if v.dtype.is_floating_point else 0
        got = s.get(k)
        if got is None:
            raise RuntimeError(f"{k}: no value")
        res.append((k, got, v.numpy(), tol * max(1.0, float(v.abs().max()) if v.dtype.is_floating_point else 1.0)))
    return res
