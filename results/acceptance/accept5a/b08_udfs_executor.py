"""UDFs and the executor over (b, t), vs numpy: a stateful source_udf (called once per point,
in increasing loop-counter order: its call log equals the row-major point order), a
source_with_ts_udf reading a Python array the program swaps between runs (reset + execute sees
the new data), map_udf over a growing slice x[b, 0:t+1] (symbolic input shape, shape defaulted),
map_with_ts_udf with a declared int output dtype and a different shape, sink_many_with_ts_udf
over tensors of different domains ((b, t) and (t,)), per-point sink order, tick() count over
the outer dim b, and execute_until_barrier between two phases followed by the rest; then a
second executor from the same context with other bounds."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

B_, T_ = 2, 4

def to_np(v):
    return v.detach().cpu().numpy() if hasattr(v, "detach") else np.asarray(v)

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core.dtype import dtypes
    be = cfg.backend
    def bt(a):
        if be == "torch":
            return torch.tensor(a)
        if be == "jax":
            import jax.numpy as jnp
            return jnp.asarray(a)
        return np.asarray(a)
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    data = {"X": np.arange(B_ * T_ * 2, dtype=np.float32).reshape(B_, T_, 2)}
    calls = []
    def src():
        calls.append(len(calls))
        return bt(np.array([float(len(calls))], np.float32))
    log = {"sink": [], "many": [], "phase": []}
    with ctx:
        cnt = RT.source_udf(src, (1,), dtypes.float32, domain=(b, t))
        x = RT.source_with_ts_udf(lambda ts: bt(data["X"][ts[b], ts[t]]), (2,), dtypes.float32,
                                  domain=(b, t))
        g = x[b, 0:t + 1].map_udf(lambda v: v * 2.0)                 # (t+1, 2)
        gs = g.sum((0, 1))
        mi = x.map_with_ts_udf(lambda v, ts: bt(np.array([ts[t] * 10 + ts[b]] * 3, np.int32)),
                               shape=(3,), dtype=dtypes.int32)
        tot_t = x[0:B, t].sum((0, 1))                                # over (t,)
        RT.sink_many_with_ts_udf([gs, tot_t], lambda vs, ts: log["many"].append(
            (ts[b], ts[t], float(to_np(vs[0])), float(to_np(vs[1])))))
        cnt.sink_with_ts_udf(lambda v, ts: log["sink"].append((ts[b], ts[t], float(to_np(v)[0]))))
        mi.sink_with_ts_udf(lambda v, ts: log.setdefault("mi", []).append(to_np(v)))
        x[b, 0:T].sum((0, 1)).sink_with_ts_udf(lambda v, ts: log["phase"].append(("p1", ts[b])))
        RT.barrier("phase1")
        (x * 3.0)[0:B, 0:T].sum().sink_udf(lambda v: log["phase"].append(("p2", float(to_np(v)))))
    exe = ctx.compile({B: B_, T: T_})
    exe.execute()
    res = []
    X = data["X"]
    res.append(("src_order", np.array([(bb, tt) for bb, tt, _ in log["sink"]]),
                np.array([(bb, tt) for bb in range(B_) for tt in range(T_)]), 0))
    res.append(("src_values", np.array([v for *_, v in log["sink"]]),
                np.arange(1, B_ * T_ + 1, dtype=np.float64), 0))
    many = {(bb, tt): (a, c) for bb, tt, a, c in log["many"]}
    res.append(("many_count", np.array(len(log["many"])), np.array(B_ * T_), 0))
    res.append(("many_gs", np.array([many[(bb, tt)][0] for bb in range(B_) for tt in range(T_)]),
                np.array([2 * X[bb, :tt + 1].sum() for bb in range(B_) for tt in range(T_)]), 1e-4))
    res.append(("many_tot", np.array([many[(bb, tt)][1] for bb in range(B_) for tt in range(T_)]),
                np.array([X[:, tt].sum() for bb in range(B_) for tt in range(T_)]), 1e-4))
    res.append(("mi", np.array(log["mi"]), np.array([[tt * 10 + bb] * 3 for bb in range(B_) for tt in range(T_)], np.int32), 0))
    res.append(("phase_run1", np.array([str(p[0]) for p in log["phase"]]), np.array(["p1", "p1", "p2"]), 0))
    res.append(("p2_val", np.array(log["phase"][-1][1]), np.array(3 * X.sum()), 1e-3))
    # second run with new data, after reset
    data["X"] = X * -1.0 + 5.0
    for k in log:
        log[k] = []
    exe.reset(); exe.execute()
    res.append(("rerun_new_data", np.array(log["phase"][-1][1]), np.array(3 * data["X"].sum()), 1e-3))
    res.append(("rerun_src_continues", np.array([v for *_, v in log["sink"]]),
                np.arange(B_ * T_ + 1, 2 * B_ * T_ + 1, dtype=np.float64), 0))
    # ticks: the outer dim b has two top-level loops here (the many-sink over (b, t) reads
    # x[0:B, t], so it runs after the main loop over b): each iteration of each is a step,
    # and the barrier with the p2 sink recorded after it one more (before the barrier fix
    # p2 could run before the barrier, inside the steps: 2 * B)
    for k in log:
        log[k] = []
    exe.reset()
    n, first = 0, None
    while exe.tick():
        n += 1
        if first is None:
            first = [bb for bb, _, _ in log["sink"]]
        if n > 50:
            break
    res.append(("ticks_b", np.array(n), np.array(2 * B_ + 1), 0))
    res.append(("first_tick_is_b0", np.array(first), np.zeros(T_, int), 0))
    res.append(("tick_ran_all", np.array(len(log["phase"])), np.array(3), 0))
    # barrier then the rest by ticking; then barrier and the rest by execute(), which ends
    # the run the barrier stopped (the sinks before it do not fire again)
    for k in log:
        log[k] = []
    exe.reset()
    exe.execute_until_barrier("phase1")
    n1 = len(log["phase"])
    while exe.tick():
        pass
    res.append(("barrier_split", np.array([n1, len(log["phase"])]), np.array([2, 3]), 0))
    for k in log:
        log[k] = []
    exe.execute_until_barrier("phase1")
    n1 = len(log["phase"])
    exe.execute()
    res.append(("barrier_execute", np.array([n1, len(log["phase"]), len(log["sink"])]),
                np.array([2, 3, B_ * T_]), 0))
    # another executor from the same context with other bounds
    for k in log:
        log[k] = []
    data["X"] = np.ones((3, 2, 2), np.float32)
    ex2 = ctx.compile({B: 3, T: 2})
    ex2.execute()
    res.append(("second_exe", np.array(log["phase"][-1][1]), np.array(3.0 * 12), 1e-4))
    return res
