"""Integer and bool dtypes through recurrences over (b, t), vs numpy: an int16 counter with
per-b step reading t-2 (Fibonacci-like, wraps nowhere), a uint8 -> int32 promotion inside a
recurrence, a bool state toggled by `^`-free logic (s = ~s | (x > 0.5) & s[t-1]), != as
elementwise (7.1) feeding a where, argmax of a window used as an integer index into a const
(index by an int tensor inside the recurrence), a running int64 max via maximum, a bool
window any/all through sum of casts, int // and % with negative values in a recurrence,
cumsum of an int window (dtype kept), and the declared dtypes of the results."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
from common import grab

B_, T_ = 2, 7


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(13)
    XF = rng.uniform(size=(B_, T_)).astype(np.float32)
    XI = rng.integers(-9, 9, size=(B_, T_)).astype(np.int32)
    TAB = np.arange(10, 20, dtype=np.int64)
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    st, dts = {}, {}
    with ctx:
        xf = RT.const(XF).index(0, b).index(0, t)
        xi = RT.const(XI).index(0, b).index(0, t)
        fib = RT.placeholder((), dtypes.int16, domain=(b, t))
        fib[t < 2] = (RT.from_symbol(b) + 1).cast(dtypes.int16)
        fib[True] = fib[b, t - 1] + fib[b, t - 2]
        u8 = RT.placeholder((), dtypes.int32, domain=(b, t))
        u8[b, 0] = RT.const(np.uint8(200)).cast(dtypes.int32)
        u8[b, t + 1] = u8 + RT.const(np.uint8(250)) - xi[b, t + 1]   # uint8 + int32 -> int32
        s = RT.placeholder((), dtypes.bool_, domain=(b, t))
        s[b, 0] = xf > 0.5
        s[b, t + 1] = (~s) | ((xf[b, t + 1] > 0.5) & s)
        ne = RT.where(xi != xi[b, ie.max(t - 1, 0)], xi, RT.const(np.int32(-100)))
        am = xf[b, ie.max(0, t - 2):t + 1].argmax(0)
        look = RT.const(TAB).index(0, am + RT.from_symbol(t))
        mx = RT.placeholder((), dtypes.int64, domain=(b, t))
        mx[b, 0] = xi.cast(dtypes.int64)
        mx[b, t + 1] = mx.maximum(xi[b, t + 1].cast(dtypes.int64))
        cnt = (xf[b, 0:t + 1] > 0.5).cast(dtypes.int32).sum(0)
        dm = RT.placeholder((), dtypes.int32, domain=(b, t))
        dm[b, 0] = xi
        dm[b, t + 1] = (dm // 3) - (dm % 4) + xi[b, t + 1]
        cs = xi[b, 0:t + 1].cumsum(0).index(0, -1)
        for n, v in dict(fib=fib, u8=u8, s=s, ne=ne, look=look, mx=mx, cnt=cnt, dm=dm, cs=cs).items():
            v[0:B, 0:T].sink_udf(grab(st, n))
            dts[n] = str(v.dtype)
    ctx.compile({B: B_, T: T_}).execute()
    W = {k: np.zeros((B_, T_), dtype=np.int64) for k in ("fib", "u8", "ne", "look", "mx", "cnt", "dm", "cs")}
    S = np.zeros((B_, T_), bool)
    for bb in range(B_):
        for tt in range(T_):
            W["fib"][bb, tt] = bb + 1 if tt < 2 else W["fib"][bb, tt - 1] + W["fib"][bb, tt - 2]
            W["u8"][bb, tt] = 200 if tt == 0 else W["u8"][bb, tt - 1] + 250 - XI[bb, tt]
            S[bb, tt] = XF[bb, 0] > 0.5 if tt == 0 else (not S[bb, tt - 1]) or (XF[bb, tt] > 0.5 and S[bb, tt - 1])
            W["ne"][bb, tt] = XI[bb, tt] if XI[bb, tt] != XI[bb, max(tt - 1, 0)] else -100
            W["look"][bb, tt] = TAB[np.argmax(XF[bb, max(0, tt - 2):tt + 1]) + tt]
            W["mx"][bb, tt] = XI[bb, :tt + 1].max()
            W["cnt"][bb, tt] = (XF[bb, :tt + 1] > 0.5).sum()
            W["dm"][bb, tt] = XI[bb, 0] if tt == 0 else (W["dm"][bb, tt - 1] // 3) - (W["dm"][bb, tt - 1] % 4) + XI[bb, tt]
            W["cs"][bb, tt] = XI[bb, :tt + 1].sum()
    out = [(n, st[n].astype(np.int64), W[n], 0) for n in W] + [("s", st["s"], S, 0)]
    acc = "int64" if cfg.backend == "torch" else "int32"  # int sums accumulate in default_int
    want_dt = dict(fib="int16", u8="int32", s="bool", ne="int32", look="int64", mx="int64",
                   cnt=acc, dm="int32", cs=acc)
    api_name = {"int16": "short", "int32": "int", "int64": "long", "bool": "bool"}  # API 5
    out.append(("dtypes", np.array([dts[k] for k in want_dt]), np.array([api_name[v] for v in want_dt.values()]), 0))
    out.append(("run_dtypes", np.array([str(st[k].dtype) for k in want_dt]),
                np.array(["bool" if v == "bool" else v for v in want_dt.values()]), 0))
    return out
