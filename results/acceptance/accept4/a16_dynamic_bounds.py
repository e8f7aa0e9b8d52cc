"""§7.10 boolean bounds: (1) an inner episode dim t whose stop condition depends on the outer
iteration i (episode i ends at t = i + 2), per-point sinks and a running sum recurrence vs
numpy; (2) an EOS-style stop on a generated token sequence (argmax chain) with a per-point
sink of every token; (3) a stop condition that never becomes true runs to M / the
default_dim_upper_bound (documented cap) — checked only to end without error."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
from common import grab

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core.dtype import dtypes
    res = []
    # (1) per-iteration episode lengths
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    log = []
    with ctx:
        ti = RT.from_symbol(t) - RT.from_symbol(i)
        done = ti >= 2
        acc = RT.placeholder((), dtypes.float32, domain=(i, t))
        acc[i, 0] = RT.from_symbol(i).cast(dtypes.float32)
        acc[i, t + 1] = acc * 2.0 + 1.0
        acc.sink_with_ts_udf(lambda v, ts: log.append((ts[i], ts[t], float(np.asarray(v.cpu() if hasattr(v, "cpu") else v)))))
    ctx.compile({I: 3, T: done}).execute()
    want = []
    for a in range(3):
        v = float(a)
        for b in range(a + 3):
            want.append((a, b, v)); v = 2 * v + 1
    res.append(("per_iter_bound", np.array(sorted(log)), np.array(want), 0))
    # (1b) the same stop depending on data (a random draw times 0): the work and the stop share a loop
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    log = []
    with ctx:
        z = RT.random((), domain=(i, t)) * 0.0
        done = (z + RT.from_symbol(t).cast(dtypes.float32) - RT.from_symbol(i).cast(dtypes.float32)) >= 2.0
        acc = RT.placeholder((), dtypes.float32, domain=(i, t))
        acc[i, 0] = RT.from_symbol(i).cast(dtypes.float32)
        acc[i, t + 1] = acc * 2.0 + 1.0
        acc.sink_with_ts_udf(lambda v, ts: log.append((ts[i], ts[t], float(np.asarray(v.cpu() if hasattr(v, "cpu") else v)))))
    ctx.compile({I: 3, T: done}).execute()
    res.append(("per_iter_bound_data", np.array(sorted(log)), np.array(want), 0))
    _part_1c(cfg, res)
    _part_2(cfg, res)
    return res

def _part_1c(cfg, res):
    try:
        _p1c(cfg, res)
    except Exception as e:  # noqa
        res.append(("t_only_bound", np.array(f"{type(e).__name__}: {str(e)[:150]}"), np.array("ok"), 0))

def _part_2(cfg, res):
    try:
        _p2(cfg, res)
    except Exception as e:  # noqa
        res.append(("eos_chain", np.array(f"{type(e).__name__}: {str(e)[:150]}"), np.array("ok"), 0))

def _p1c(cfg, res):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core.dtype import dtypes
    # (1c) a stop over t only (symbols only), work over (i, t)
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    log = []
    with ctx:
        done = RT.from_symbol(t) >= 2
        acc = RT.placeholder((), dtypes.float32, domain=(i, t))
        acc[i, 0] = RT.from_symbol(i).cast(dtypes.float32)
        acc[i, t + 1] = acc * 2.0 + 1.0
        acc.sink_with_ts_udf(lambda v, ts: log.append((ts[i], ts[t])))
    ctx.compile({I: 3, T: done}).execute()
    res.append(("t_only_bound", np.array(sorted(log)), np.array([(a, b) for a in range(3) for b in range(3)]), 0))

def _p2(cfg, res):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core.dtype import dtypes
    # (2) EOS stop on a token chain
    ctx2 = TempoContext(cfg, dim_names=("t",))
    ((t2, T2),) = ctx2.variables_and_bounds
    NXT = np.array([3, 0, 5, 4, 2, 1, 6], np.int64)  # token k -> NXT[k]; 6 is EOS; 0->3->4->2->5->1->0 ... never 6
    NXT2 = np.array([3, 6, 5, 4, 2, 1, 6], np.int64)  # 0->3->4->2->5->1->6 stop
    toks = []
    with ctx2:
        table = RT.const(np.eye(7, dtype=np.float32)[NXT2])  # one-hot rows: logits
        tok = RT.placeholder((), dtypes.default_int, domain=(t2,))
        tok[0] = RT.const(0).cast(dtypes.default_int)
        tok[t2 + 1] = table.index(0, tok).argmax(0).cast(dtypes.default_int)
        tok.sink_udf(lambda v: toks.append(int(np.asarray(v.cpu() if hasattr(v, "cpu") else v))))
    ctx2.compile({T2: tok == 6}).execute()
    res.append(("eos_chain", np.array(toks), np.array([0, 3, 4, 2, 5, 1, 6]), 0))
