"""§4.1/§7.10 executor API: the same context compiled twice with different bounds; a run,
reset(), and a second run; tick() count = outer iterations with sinks firing in order;
two barriers hit in order; get_spatial_tensor_torch with ints / negative ints / slices over a
2-D domain (test config keeps tensors); a boolean bound (episode end) whose stop point moves
between runs because a UDF source reads a Python variable; memory_stats / schedule_text /
get_compilation_time_breakdown shapes; shutdown."""
import sys, os, dataclasses
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab, grab_list

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core.dtype import dtypes
    from tempo.core.configs import ExecutionConfig
    res = []
    # 1. same ctx, two compiles
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    log = []
    with ctx:
        x = RT.placeholder((2,), dtypes.float32, domain=(i, t))
        x[i, 0] = RT.ones((2,)) * RT.from_symbol(i).cast(dtypes.float32)
        x[i, t + 1] = x * 2.0 + 1.0
        tot = x[i, 0:T].sum(0)
        tot.sink_with_ts_udf(lambda v, ts: log.append((ts[i], float(np.asarray(v.cpu() if hasattr(v, "cpu") else v)[0]))))
        RT.barrier("after_tot")
        grand = tot[0:I].sum(0)
        grand.sink_udf(lambda v: log.append(("grand", float(np.asarray(v.cpu() if hasattr(v, "cpu") else v)[0]))))
        RT.barrier("end")
    def ref_tot(ii, TT):
        v, out = float(ii), 0.0
        for _ in range(TT):
            out += v; v = 2 * v + 1
        return out
    e1 = ctx.compile({I: 2, T: 3})
    e1.execute()
    res.append(("run1", np.array([v for _, v in log]), np.array([ref_tot(0, 3), ref_tot(1, 3), ref_tot(0, 3) + ref_tot(1, 3)]), 1e-4))
    log.clear()
    e2 = ctx.compile({I: 3, T: 5})
    e2.execute()
    res.append(("run2_bounds", np.array([v for _, v in log]), np.array([ref_tot(k, 5) for k in range(3)] + [sum(ref_tot(k, 5) for k in range(3))]), 1e-4))
    log.clear()
    e2.reset(); e2.execute()
    res.append(("rerun_after_reset", np.array(len(log)), np.array(4), 0))
    # ticks: one per outer iteration (i), until False
    log.clear(); e2.reset()
    n_ticks, seen = 0, []
    while e2.tick():
        n_ticks += 1; seen.append(len(log))
        if n_ticks > 20: break
    res.append(("tick_sinks_in_order", np.array([k for k, _ in log]), np.array([0, 1, 2, "grand"]), 0))
    res.append(("ticks_progress", np.array(seen[:3]), np.array([1, 2, 3]), 0))
    # barriers
    log.clear(); e2.reset()
    e2.execute_until_barrier("after_tot")
    a = len(log)
    e2.execute_until_barrier("end")
    res.append(("barriers", np.array([a, len(log)]), np.array([3, 4]), 0))
    # 2. reads with the test config
    tcfg = dataclasses.replace(ExecutionConfig.test_cfg(), backend=cfg.backend, path=cfg.path)
    ctx2 = TempoContext(tcfg, dim_names=("i", "t"))
    (i2, I2), (t2, T2) = ctx2.variables_and_bounds
    with ctx2:
        y = RT.ones((3,)) * RT.from_symbol(i2).cast(dtypes.float32) * 10.0 + RT.from_symbol(t2).cast(dtypes.float32)
        y = y.ident()
        y[0:I2, 0:T2].sum().sink_udf(lambda v: None)
    e3 = ctx2.compile({I2: 3, T2: 4})
    e3.execute()
    g = e3.get_spatial_tensor_torch
    Y = np.array([[[10 * a + b] * 3 for b in range(4)] for a in range(3)], np.float32)
    res.append(("read_point", g(y.tensor_id, (1, 2)), Y[1, 2], 0))
    res.append(("read_neg", g(y.tensor_id, (-1, -2)), Y[-1, -2], 0))
    res.append(("read_slice", g(y.tensor_id, (slice(0, 2), 3)), Y[0:2, 3], 0))
    res.append(("read_2slices", g(y.tensor_id, (slice(1, 3), slice(0, 4))), Y[1:3, 0:4], 0))
    nat = e3.get_spatial_tensor(y.tensor_id, (2, 0))
    res.append(("read_native", np.asarray(nat.cpu() if hasattr(nat, "cpu") else nat), Y[2, 0], 0))
    ms = e3.memory_stats()
    res.append(("memory_stats_is_dict", np.array(isinstance(ms, dict) and len(ms) > 0), np.array(True), 0))
    res.append(("schedule_text", np.array(isinstance(e3.schedule_text(), str) and "for" in e3.schedule_text()), np.array(True), 0))
    bd = e3.get_compilation_time_breakdown()
    res.append(("breakdown", np.array(isinstance(bd, dict) and all(isinstance(v, (int, float)) for v in bd.values())), np.array(True), 0))
    # 3. boolean bound that moves between runs
    stop_at = {"k": 3}
    ctx3 = TempoContext(cfg, dim_names=("t",))
    ((t3, T3),) = ctx3.variables_and_bounds
    seen3 = []
    with ctx3:
        src = RT.source_with_ts_udf(lambda ts: _backend_scalar(cfg, float(ts[t3] >= stop_at["k"])), (), dtypes.float32, domain=(t3,))
        done = src > 0.5
        z = RT.placeholder((), dtypes.float32, domain=(t3,))
        z[0] = RT.const(1.0)
        z[t3 + 1] = z * 3.0
        z.sink_with_ts_udf(lambda v, ts: seen3.append(ts[t3]))
    e4 = ctx3.compile({T3: done})
    e4.execute()
    first = list(seen3)
    seen3.clear(); stop_at["k"] = 5
    e4.reset(); e4.execute()
    res.append(("bool_bound_run1", np.array(first), np.arange(4), 0))
    res.append(("bool_bound_run2_moved", np.array(seen3), np.arange(6), 0))
    e4.shutdown()
    return res

def _backend_scalar(cfg, v):
    if cfg.backend == "torch":
        return torch.tensor(v, dtype=torch.float32)
    if cfg.backend == "jax":
        import jax.numpy as jnp
        return jnp.asarray(v, dtype=jnp.float32)
    return np.asarray(v, np.float32)
