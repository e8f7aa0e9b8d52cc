"""§3.2/§3.3/§3.6/§3.8 construction, attributes and UDFs vs numpy: placeholder_like, const_like
(implied dtype), ones_like (float default), arange(stop, start, step), random_int / random_bool /
normal(mean, std) moments, glorot/kaiming/orthogonal init statistics, init_from_statedict with
a key depending on a symbol, init_from_existing_tensor (tying), external_init, source_udf,
map_udf default dtype = input's (§7.3), map_with_ts_udf, sink_many_udf, sink_many_with_ts_udf,
x.T, size(), ndim, numel, matmul's size-1 squeeze quirk, broadcast_tensors, expand(-1),
squeeze(None), multinomial 2-D, sample_likely, copy_with_no_symbolic_index, is_like."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab, grab_list

def _bt(cfg, a):
    if cfg.backend == "torch":
        return torch.tensor(a)
    if cfg.backend == "jax":
        import jax.numpy as jnp
        return jnp.asarray(a)
    return np.asarray(a)

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    import tempo.api.recurrent_tensor as tpo
    from tempo.core.dtype import dtypes
    ctx = TempoContext(cfg, dim_names=("l", "n"))
    (l, L), (n, N) = ctx.variables_and_bounds
    s, meta = {}, {}
    SD = {f"layers.{k}.w": np.full((2, 3), float(k + 1), np.float32) for k in range(3)}
    with ctx:
        x = RT.const(np.arange(6, dtype=np.float32).reshape(2, 3))
        ph = RT.placeholder_like(x)
        ph[True] = x * 2.0
        meta["const_like"] = str(RT.const_like(3, x).dtype)
        meta["ones_like"] = str(RT.ones_like(RT.const(np.zeros((2,), np.int32))).dtype)
        meta["attrs"] = (tuple(x.T.shape), x.size(), x.size(1), x.ndim, x.numel)
        RT.arange(10, 2, 3).sink_udf(grab(s, "arange"))
        ri = RT.random_int(3, 7, shape=(50,), domain=(n,)); ri[0:N].sink_udf(grab(s, "ri"))
        rb = RT.random_bool(shape=(50,), domain=(n,)); rb[0:N].sink_udf(grab(s, "rb"))
        nm = RT.normal(shape=(50,), domain=(n,), mean=2.0, std=0.5); nm[0:N].sink_udf(grab(s, "nm"))
        RT.glorot_uniform((40, 60), dtypes.float32, ()).sink_udf(grab(s, "glorot")) if hasattr(RT, "glorot_uniform") else None
        RT.orthogonal_init((6, 4), dtypes.float32, (), gain=2.0).sink_udf(grab(s, "orth"))
        w = RT.init_from_statedict(SD, lambda ts: f"layers.{ts[l]}.w", shape=(2, 3), dtype=dtypes.float32, domain=(l,))
        w[0:L].sink_udf(grab(s, "statedict"))
        tied = RT.init_from_existing_tensor(x, (2, 3), dtypes.float32)
        (tied + 0.0).sink_udf(grab(s, "tied"))
        ext = tpo.external_init(lambda: _bt(cfg, np.ones((2,), np.float32) * 5), (2,), dtypes.float32, domain=(n,))
        ext[0:N].sink_udf(grab(s, "ext"))
        src = RT.source_udf(lambda: _bt(cfg, np.array([1.0, 2.0], np.float32)), (2,), dtypes.float32, domain=(n,))
        m1 = src.map_udf(lambda v: v * 3)
        meta["map_dtype"] = str(RT.const(np.array([1, 2], np.int16)).map_udf(lambda v: v).dtype)
        m2 = src.map_with_ts_udf(lambda v, ts: v + ts[n])
        m1[0:N].sink_udf(grab(s, "map"))
        m2[0:N].sink_udf(grab(s, "map_ts"))
        many = []
        RT.sink_many_udf([x, ph], lambda vs: many.append([np.asarray(v.cpu() if hasattr(v, "cpu") else v) for v in vs]))
        many_ts = []
        RT.sink_many_with_ts_udf([src, m2], lambda vs, ts: many_ts.append(ts[n]))
        a = RT.const(np.ones((1, 3), np.float32)); bm = RT.const(np.ones((3, 1), np.float32) * 2)
        meta["matmul_quirk"] = tuple((a @ bm).shape)
        (a @ bm).sink_udf(grab(s, "mm"))
        b1, b2 = RT.broadcast_tensors(RT.const(np.ones((3, 1), np.float32)), RT.const(np.ones((1, 4), np.float32)))
        meta["bcast"] = (tuple(b1.shape), tuple(b2.shape))
        meta["expand"] = tuple(RT.const(np.ones((3, 1), np.float32)).expand((2, -1, 5)).shape)
        meta["squeeze"] = tuple(RT.const(np.ones((1, 3, 1, 2), np.float32)).squeeze().shape)
        mn = RT.const(np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], np.float32)).multinomial(1)
        mn.sink_udf(grab(s, "multinomial"))
        sl = tpo.sample_likely(RT.const(np.array([0.01, 0.98, 0.01], np.float32)), above=0.05)
        sl.sink_udf(grab(s, "sample_likely"))
        meta["is_like"] = (x.is_like(ph), x.is_like(RT.const(np.ones((2, 3), np.int32))))
        cp = x.copy_with_no_symbolic_index()
        meta["copy"] = tuple(cp.shape)
        ph.sink_udf(grab(s, "ph"))
    ctx.compile({L: 3, N: 400}).execute()
    ri, rb, nm = s["ri"], s["rb"], s["nm"]
    orth = s["orth"]
    res = [
        ("meta", np.array(repr(meta)), np.array(repr({"const_like": "char", "ones_like": "float", "attrs": ((3, 2), (2, 3), 3, 2, 6),
              "map_dtype": "short", "matmul_quirk": (), "bcast": ((3, 4), (3, 4)), "expand": (2, 3, 5), "squeeze": (3, 2),
              "is_like": (True, False), "copy": (2, 3)})), 0),
        ("arange", s["arange"], np.arange(2, 10, 3), 0),
        ("ri_range", np.array([ri.min(), ri.max()]), np.array([3, 6]), 0),
        ("ri_mean", np.array(ri.mean()), np.array(4.5), 0.05),
        ("rb_mean", np.array(rb.mean()), np.array(0.5), 0.02),
        ("nm_moments", np.array([nm.mean(), nm.std()]), np.array([2.0, 0.5]), 0.02),
        ("orth", orth.T @ orth, 4.0 * np.eye(4), 1e-4),
        ("statedict", s["statedict"], np.stack([SD[f"layers.{k}.w"] for k in range(3)]), 0),
        ("tied", s["tied"], np.arange(6, dtype=np.float32).reshape(2, 3), 0),
        ("ext", s["ext"], np.full((400, 2), 5.0, np.float32), 0),
        ("map", s["map"], np.tile([3.0, 6.0], (400, 1)), 0),
        ("map_ts", s["map_ts"], np.array([1.0, 2.0]) + np.arange(400)[:, None], 0),
        ("sink_many", np.concatenate([m.ravel() for m in many[0]]), np.concatenate([np.arange(6), 2 * np.arange(6)]).astype(np.float32), 0),
        ("sink_many_ts", np.array(many_ts), np.arange(400), 0),
        ("mm", s["mm"], np.array(6.0, np.float32), 0),
        ("multinomial", s["multinomial"].ravel(), np.array([1, 2]), 0),
        ("sample_likely", s["sample_likely"].ravel(), np.array([1]), 0),
        ("ph", s["ph"], 2 * np.arange(6, dtype=np.float32).reshape(2, 3), 0),
    ]
    if "glorot" in s:
        lim = np.sqrt(6 / (40 + 60))
        res.append(("glorot", np.array([np.abs(s["glorot"]).max() <= lim, abs(s["glorot"].std() - lim / np.sqrt(3)) < 0.01]), np.array([True, True]), 0))
    return res
