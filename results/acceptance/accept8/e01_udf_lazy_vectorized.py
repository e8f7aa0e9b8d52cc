"""§3.3/§3.6 UDF sources with `lazy_vectorized_version` (never used by accept2-7) over three
nested dims (b, i, t): a data source whose vectorised form handles t and b and declines i
(returns None), a second source returning a per-(b) row with a vectorised form over b; a
recurrence over t (h = 0.5 h[t-1] + x), a carry over the middle dim i (c[i] = c[i-1] + h),
a map_with_ts_udf scaling by (1 + t) with a declared float64 output, sink_with_ts_udf of a
(b, i) reduction over t (called once per (b, i) in increasing loop-counter order, with the
right symbol values), sink_many_with_ts_udf of two tensors of domains (b, i) and (i,).
Reference: numpy loops. Also checks that a vectorised form, when called, was asked only for
the dims it claims (a wrong dim would give wrong rows)."""
import numpy as np

from common8 import np_of

B_, I_, T_, D = 2, 3, 4, 3


def to_backend(backend):
    if backend == "torch":
        import torch
        return torch.from_numpy
    if backend == "jax":
        import jax.numpy as jnp
        return jnp.asarray
    return np.asarray


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core.dtype import dtypes

    g = np.random.default_rng(11)
    data = g.normal(size=(B_, I_, T_, D)).astype(np.float32)
    rowdata = g.normal(size=(B_, D)).astype(np.float32)
    conv = to_backend(cfg.backend)
    ctx = TempoContext(cfg, dim_names=("b", "i", "t"))
    (b, B), (i, I), (t, T) = ctx.variables_and_bounds
    asked = []
    st = {"per_bi": [], "many": []}

    def vec(dim, size):
        asked.append(dim.name)
        if dim.name == "t":
            return lambda ts: conv(data[ts[b], ts[i], :size].copy())
        if dim.name == "b":
            return lambda ts: conv(data[:size, ts[i], ts[t]].copy())
        return None

    def vec_row(dim, size):
        return (lambda ts: conv(rowdata[:size].copy())) if dim.name == "b" else None

    with ctx:
        x = RT.source_with_ts_udf(lambda ts: conv(data[ts[b], ts[i], ts[t]].copy()), (D,),
                                  dtypes.float32, domain=(b, i, t), lazy_vectorized_version=vec)
        row = RT.source_with_ts_udf(lambda ts: conv(rowdata[ts[b]].copy()), (D,),
                                    dtypes.float32, domain=(b,), lazy_vectorized_version=vec_row)
        h = RT.placeholder((D,), dtypes.float32, domain=(b, i, t))
        h[b, i, 0] = x + row
        h[b, i, t] = 0.5 * h[b, i, t - 1] + x
        c = RT.placeholder((D,), dtypes.float32, domain=(b, i, t))
        c[b, 0, t] = h
        c[True] = c[b, i - 1, t] + h
        m = c.map_with_ts_udf(lambda v, ts: (v * (1 + ts[t])).astype("float64")
                              if cfg.backend != "torch" else (v * (1 + ts[t])).double(),
                              dtype=dtypes.float64)
        s = m[b, i, 0:T].sum(0)                                             # (D,) over (b, i)
        s.sink_with_ts_udf(lambda v, ts: st["per_bi"].append(((ts[b], ts[i]), np_of(v))))
        tot = c[0:B, i, T - 1].sum(0)                                       # (D,) over (i,)
        RT.sink_many_with_ts_udf([s, tot], lambda vs, ts: st["many"].append(
            ((ts[b], ts[i]), np_of(vs[0]), np_of(vs[1]))))
    ctx.compile({B: B_, I: I_, T: T_}).execute()

    h_ = np.zeros((B_, I_, T_, D), np.float64)
    for bi in range(B_):
        for ii in range(I_):
            for ti in range(T_):
                h_[bi, ii, ti] = (data[bi, ii, 0] + rowdata[bi] if ti == 0
                                  else 0.5 * h_[bi, ii, ti - 1] + data[bi, ii, ti])
    c_ = np.cumsum(h_, axis=1)
    m_ = c_ * (1 + np.arange(T_))[None, None, :, None]
    s_ = m_.sum(2)                                                          # (B, I, D)
    tot_ = c_[:, :, T_ - 1].sum(0)                                          # (I, D)
    keys = [k for k, _ in st["per_bi"]]
    got = np.stack([v for _, v in sorted(st["per_bi"])])
    many_keys = sorted(k for k, _, _ in st["many"])
    many_s = np.stack([v for _, v, _ in sorted(st["many"], key=lambda r: r[0])])
    many_t = np.stack([w for _, _, w in sorted(st["many"], key=lambda r: r[0])])
    order = [(bi, ii) for bi in range(B_) for ii in range(I_)]
    return [("sink order (b, i) row-major", np.array(keys), np.array(order), 0),
            ("per (b,i) sums", got, s_.reshape(B_ * I_, D), 1e-4),
            ("many keys", np.array(many_keys), np.array(order), 0),
            ("many s", many_s, s_.reshape(B_ * I_, D), 1e-4),
            ("many tot", many_t, np.stack([tot_[ii] for _, ii in order]), 1e-4),
            ("vectorised dims asked are b/t/i only", np.array(set(asked) <= {"b", "i", "t"}),
             np.array(True), 0)]
