"""Recurrences in non-default dtypes vs numpy: an int64 LCG-like counter with % and //
(c[t+1] = (c * 5 + 3) % 17), an int32 Collatz step via where on a parity test, a bool
recurrence (running logical or of a threshold test, with ~ and &), a float64 accumulation of
1e-9 increments that float32 would lose, an int8 const promoted with a float (int8 + float32
-> float32), a uint8 counter cast to int16 before subtracting (no wraparound), one_hot of an int
recurrence (dtype kept), int floor_div / remainder of negative values (floor semantics), and
an int sum of a temporal slice."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
from common import grab

T_ = 7

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core.dtype import dtypes
    ctx = TempoContext(cfg, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    s = {}
    with ctx:
        c = RT.placeholder((), dtypes.int64, domain=(t,))
        c[0] = RT.const(1, dtype=dtypes.int64)
        c[t + 1] = (c * 5 + 3) % 17
        z = RT.placeholder((), dtypes.int32, domain=(t,))
        z[0] = RT.const(27, dtype=dtypes.int32)
        even = (z % 2) == 0
        z[t + 1] = RT.where(even, z // 2, z * 3 + 1)
        vals = RT.const(np.array([0.1, 0.9, 0.2, 0.3, 0.95, 0.1, 0.0], np.float32)).index(0, t)
        seen = RT.placeholder((), dtypes.bool_, domain=(t,))
        seen[0] = vals > 0.5
        seen[t + 1] = seen | (vals[t + 1] > 0.5)
        fresh = (vals > 0.5) & ~seen[t - 1] if False else None
        f = RT.placeholder((), dtypes.float64, domain=(t,))
        f[0] = RT.const(np.float64(1.0))
        f[t + 1] = f + RT.const(np.float64(1e-9))
        mix = RT.const(3) + vals                          # int8 + float32
        u = RT.placeholder((), dtypes.uint8, domain=(t,))
        u[0] = RT.const(np.uint8(250))
        u[t + 1] = u + RT.const(np.uint8(1))
        ud = u.cast(dtypes.int16) - RT.const(np.int16(252))
        oh = (c % 4).one_hot(4)
        neg = RT.from_symbol(t) - 3
        fd = neg // 2
        rm = neg % 2
        csum = c[0:t + 1].sum(0)
        for k, v in dict(c=c, z=z, seen=seen, f=f, mix=mix, u=u, ud=ud, oh=oh, fd=fd, rm=rm,
                         csum=csum).items():
            v[0:T].sink_udf(grab(s, k))
        s["dtypes"] = {k: str(v.dtype) for k, v in dict(c=c, z=z, seen=seen, f=f, mix=mix, u=u,
                                                        ud=ud, oh=oh, fd=fd).items()}
    ctx.compile({T: T_}).execute()
    r = {}
    cc = [1]
    for _ in range(T_ - 1):
        cc.append((cc[-1] * 5 + 3) % 17)
    r["c"] = np.array(cc, np.int64)
    zz = [27]
    for _ in range(T_ - 1):
        zz.append(zz[-1] // 2 if zz[-1] % 2 == 0 else zz[-1] * 3 + 1)
    r["z"] = np.array(zz, np.int32)
    vals = np.array([0.1, 0.9, 0.2, 0.3, 0.95, 0.1, 0.0], np.float32)
    r["seen"] = np.logical_or.accumulate(vals > 0.5)
    r["f"] = 1.0 + 1e-9 * np.arange(T_, dtype=np.float64)
    r["mix"] = 3 + vals
    r["u"] = (250 + np.arange(T_)).astype(np.uint8)
    r["ud"] = (250 + np.arange(T_)).astype(np.uint8).astype(np.int16) - 252
    r["oh"] = np.eye(4, dtype=np.int64)[np.array(cc) % 4]
    nn = np.arange(T_) - 3
    r["fd"] = nn // 2
    r["rm"] = nn % 2
    r["csum"] = np.cumsum(cc)
    out = []
    for k, w in r.items():
        g = s[k]
        if k == "f":
            out.append((k, g - 1.0, w - 1.0, 1e-15))
            continue
        out.append((k, g, w, 1e-6))
    want_dt = dict(c="long", z="int", seen="bool", f="double", mix="float", u="unsigned char",
                   ud="short", oh="long", fd=None)   # DataType str is its C name (API 5)
    for k, dt in want_dt.items():
        if dt is not None:
            out.append(("dtype_" + k, np.array(s["dtypes"][k]), np.array(dt), 0))
    # the run-time dtype of the sunk values too
    for k in ["c", "z", "f", "u", "ud", "oh"]:
        out.append(("rt_dtype_" + k, np.array(str(s[k].dtype)), np.array(str(r[k].dtype)), 0))
    return out
