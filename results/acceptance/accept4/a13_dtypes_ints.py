"""§5 dtypes at run time on each backend, vs numpy/torch: default_int per backend (torch int64,
jax/numpy int32) for arange/from_symbol; implied const dtypes (2 -> int8, 300 -> int16, list ->
upcast); int8 + float32 -> float32; uint8 neg promotes to signed (int16); int floor-div and
remainder on negatives (floor semantics); relu/abs keep int; bool arithmetic; float64 numpy
consts stay float64 through a recurrence; cast float->int truncation; float16 math; int sum."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
from common import grab

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core.dtype import dtypes
    ctx = TempoContext(cfg, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    s, dts = {}, {}
    with ctx:
        di = dtypes.default_int
        vals = {
            "arange": RT.arange(5),
            "from_symbol": RT.from_symbol(t),
            "c_int8": RT.const(2), "c_int16": RT.const(300), "c_list": RT.const([1, 2.5]),
            "mix": RT.const(np.array([1, -2, 3], np.int8)) + RT.const(np.array([0.5, 0.5, 0.5], np.float32)),
            "uneg": -RT.const(np.array([1, 200], np.uint8)),
            "ifloordiv": RT.const(np.array([-7, 7, -1, 5], np.int32)) // RT.const(np.array([2, -2, 3, 5], np.int32)),
            "irem": RT.const(np.array([-7, 7, -1, 5], np.int32)) % RT.const(np.array([2, -2, 3, 5], np.int32)),
            "irelu": RT.const(np.array([-3, 4], np.int32)).relu(), "iabs": RT.const(np.array([-3, 4], np.int16)).abs(),
            "bool_and": (RT.const(np.array([1.0, -1.0])) > 0.0) & (RT.const(np.array([2.0, 2.0])) > 1.0),
            "cast_trunc": RT.const(np.array([-1.7, 1.7, 2.5], np.float32)).cast(dtypes.int32),
            "f16": (RT.const(np.array([1.5, 2.25], np.float16)) * 2.0),
            "isum": RT.const(np.array([[100, 100], [100, 27]], np.int8)).cast(dtypes.int32).sum(),
            "iexp": RT.const(np.array([1, 2], np.int64)).exp(),
        }
        acc = RT.placeholder((2,), dtypes.float64, domain=(t,))
        acc[0] = RT.const(np.array([1.0, 1e-12]))
        acc[t + 1] = acc * RT.const(np.array([1.0 + 1e-12, 3.0]))
        vals["f64_rec"] = acc[T - 1]
        for k, v in vals.items():
            dts[k] = str(v.dtype)
            (v[0:T] if t in v.domain else v).sink_udf(grab(s, k))
    ctx.compile({T: 4}).execute()
    be = cfg.backend
    di_np = np.int64 if be == "torch" else np.int32
    ref = {
        "arange": np.arange(5, dtype=di_np), "from_symbol": np.arange(4, dtype=di_np),
        "c_int8": np.int8(2), "c_int16": np.int16(300), "c_list": np.array([1, 2.5], np.float32),
        "mix": np.array([1.5, -1.5, 3.5], np.float32), "uneg": np.array([-1, -200], np.int16),
        "ifloordiv": np.array([-4, -4, -1, 1], np.int32), "irem": np.array([1, -1, 2, 0], np.int32),
        "irelu": np.array([0, 4], np.int32), "iabs": np.array([3, 4], np.int16), "bool_and": np.array([True, False]),
        "cast_trunc": np.array([-1, 1, 2], np.int32), "f16": np.array([3.0, 4.5], np.float32),  # 2.0 is implied float32: half*float -> float
        "isum": np.asarray(327, di_np), "iexp": np.exp(np.array([1, 2])).astype(np.float32),
        "f64_rec": np.array([(1.0 + 1e-12) ** 3, 1e-12 * 27.0]),
    }
    want_dt = {"arange": "long" if be == "torch" else "int", "from_symbol": "long" if be == "torch" else "int",
               "c_int8": "char", "c_int16": "short", "c_list": "float", "mix": "float", "uneg": "short",
               "isum": "long" if be == "torch" else "int", "irelu": "int", "iabs": "short", "f16": "float", "iexp": "float", "f64_rec": "double", "bool_and": "bool"}
    res = []
    for k, v in ref.items():
        got = np.asarray(s[k])
        res.append((k, got, v, 1e-15 if k == "f64_rec" else (1e-3 if v.dtype.kind == "f" else 0)))
        res.append((k + ".np_dtype", np.array(str(got.dtype)), np.array(str(np.asarray(v).dtype)), 0))
    for k, w in want_dt.items():
        res.append((k + ".dtype", np.array(dts[k]), np.array(w), 0))
    return res
