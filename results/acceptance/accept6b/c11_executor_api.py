"""Executor API details (API 4.1, 7.10, 7.13) over (i, t), vs numpy: tick() steps the outer
loop (sinks fire per iteration, False at the end), execute() after a part-way tick run,
execute_until_barrier between two phases then tick to the end, get_spatial_tensor with int,
negative int and slice indices (stacked in index order) and get_spatial_tensor_torch of an
empty-domain tensor (GC off), the unknown-barrier error, reset() + execute() reruns with
new data from a source UDF, memory_stats keys with a device cap, schedule_text naming the
user's dims, get_compilation_time_breakdown, dimension_extents of a boolean bound, and a
second compile of the same context with other bounds."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import dataclasses
import numpy as np, torch

I_, T_ = 3, 4


def _np(v):
    return np.array(v.detach().cpu().numpy() if hasattr(v, "detach") else v)


def _bt(be, a):
    if be == "torch":
        return torch.tensor(a)
    if be == "jax":
        import jax.numpy as jnp
        return jnp.asarray(a)
    return np.asarray(a)


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core.dtype import dtypes
    from tempo.core.errors import TempoError
    res = []
    cfg = dataclasses.replace(cfg, enable_gc=False)
    data = {"X": np.arange(I_ * T_, dtype=np.float32).reshape(I_, T_)}
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    log = []
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: _bt(cfg.backend, np.float32(data["X"][ts[i], ts[t]])),
                                  (), dtypes.float32, domain=(i, t))
        h = RT.placeholder((), dtypes.float32, domain=(i, t))
        h[i, 0] = x
        h[i, t + 1] = h * 0.5 + x[i, t + 1]
        ep = h[i, 0:T].sum(0)
        ep.sink_with_ts_udf(lambda v, ts: log.append(("ep", ts[i], float(_np(v)))))
        RT.barrier("mid")
        tot = ep[0:I].sum(0)
        tot.sink_udf(lambda v: log.append(("tot", -1, float(_np(v)))))
        c = RT.const(np.array([1.0, 2.0], np.float32)) * 3.0
        c.sink_udf(lambda v: None)
    exe = ctx.compile({I: I_, T: T_})

    def ref(X):
        H = np.zeros_like(X, dtype=np.float64)
        for ii in range(I_):
            H[ii, 0] = X[ii, 0]
            for tt in range(1, T_):
                H[ii, tt] = H[ii, tt - 1] * 0.5 + X[ii, tt]
        return H
    H = ref(data["X"])
    eps = H.sum(1)
    # ticks
    steps = 0
    while exe.tick():
        steps += 1
        if steps == 1:
            res.append(("tick1_fired_ep0", np.array([e[1] for e in log if e[0] == "ep"]), np.array([0]), 0))
        if steps > 50:
            break
    res.append(("ticks_end", np.array(bool(steps <= 50)), np.array(True), 0))
    res.append(("tick_run_eps", np.array([e[2] for e in log if e[0] == "ep"]), eps, 1e-4))
    res.append(("tick_run_tot", np.array([e[2] for e in log if e[0] == "tot"]), np.array([eps.sum()]), 1e-3))
    # part-way tick then execute
    log.clear(); exe.tick(); log.clear(); exe.execute()
    res.append(("execute_after_tick", np.array([e[2] for e in log if e[0] == "ep"]), eps, 1e-4))
    # until barrier, then the rest by ticking
    log.clear(); exe.execute_until_barrier("mid")
    res.append(("until_barrier_eps", np.array([e[2] for e in log]), eps, 1e-4))
    while exe.tick():
        pass
    res.append(("rest_after_barrier", np.array([e[0] for e in log]), np.array(["ep"] * I_ + ["tot"]), 0))
    # spatial tensors
    g = lambda idx: _np(exe.get_spatial_tensor(h.tensor_id, idx))
    res.append(("gst_point", g((1, 2)), np.array(H[1, 2], np.float32), 1e-4))
    res.append(("gst_neg", g((-1, T_ - 1)), np.array(H[-1, T_ - 1], np.float32), 1e-4))
    try:  # h[t + 1] = ... gives h T + 1 points (API 3.5): -1 is the never-computed point T
        g((0, -1))
    except TempoError as e:
        res.append(("gst_shift_point_named", np.array("t = 4" in str(e)), np.array(True), 0))
    res.append(("gst_slices", g((slice(0, I_), slice(1, 3))), H[:, 1:3].astype(np.float32), 1e-4))
    res.append(("gst_t_slice", g((2, slice(0, T_))), H[2].astype(np.float32), 1e-4))
    ct = exe.get_spatial_tensor_torch(c.tensor_id, ())
    res.append(("gst_torch_const", np.array(isinstance(ct, torch.Tensor)), np.array(True), 0))
    res.append(("gst_torch_val", ct.numpy(), np.array([3.0, 6.0], np.float32), 0))
    try:
        exe.get_spatial_tensor(h.tensor_id, (I_, 0))
        res.append(("gst_out_of_range", np.array("no error"), np.array("TempoError"), 0))
    except TempoError:
        pass
    try:
        exe.execute_until_barrier("nope")
        res.append(("unknown_barrier", np.array("no error"), np.array("TempoError"), 0))
    except TempoError as e:
        res.append(("unknown_barrier_names_mid", np.array("'mid'" in str(e)), np.array(True), 0))
    # reset + new data
    data["X"] = data["X"][::-1].copy() * 2.0
    log.clear(); exe.reset(); exe.execute()
    res.append(("rerun_new_data", np.array([e[2] for e in log if e[0] == "ep"]), ref(data["X"]).sum(1), 1e-3))
    # introspection
    txt = exe.schedule_text()
    res.append(("schedule_names_dims", np.array(["for i in" in txt, "for t in" in txt]), np.array([True, True]), 0))
    br = exe.get_compilation_time_breakdown()
    res.append(("breakdown", np.array(isinstance(br, dict) and len(br) > 0 and all(isinstance(v, (int, float)) for v in br.values())), np.array(True), 0))
    ms = exe.memory_stats()
    res.append(("memory_stats_keys", np.array(sorted(k for k in ("live_bytes", "peak_bytes", "swapped_bytes") if k in ms)),
                np.array(["live_bytes", "peak_bytes", "swapped_bytes"]), 0))
    # second compile, other bounds
    log.clear()
    exe2 = ctx.compile({I: 2, T: 3})
    exe2.execute()
    H2 = ref(data["X"])[:2, :3]
    H2 = np.array([[data["X"][k, 0] * 0 + 0 for _ in range(3)] for k in range(2)])
    want2 = []
    for ii in range(2):
        hv = data["X"][ii, 0]
        s = hv
        for tt in range(1, 3):
            hv = hv * 0.5 + data["X"][ii, tt]; s += hv
        want2.append(s)
    res.append(("second_compile", np.array([e[2] for e in log if e[0] == "ep"]), np.array(want2), 1e-3))
    # a device cap: memory_stats reports it and peak is tracked
    ctx3 = TempoContext(dataclasses.replace(cfg, device_memory_cap_bytes=10_000_000), dim_names=("t",))
    ((t3, T3),) = ctx3.variables_and_bounds
    with ctx3:
        z = RT.placeholder((16,), dtypes.float32, domain=(t3,))
        z[0] = RT.ones((16,))
        z[t3 + 1] = z * 1.5
        done = z.sum() > 300.0
        z[0:T3].sum(0).sink_udf(lambda v: log.append(("z", 0, float(_np(v).sum()))))
    e3 = ctx3.compile({T3: done})
    e3.execute()
    n_pts = int(np.argmax(16 * 1.5 ** np.arange(20) > 300.0)) + 1
    res.append(("bool_bound_extent", np.array(e3.dimension_extents()["t"]), np.array(n_pts), 0))
    ms3 = e3.memory_stats()
    res.append(("cap_reported", np.array(ms3["cap_bytes"]), np.array(10_000_000), 0))
    res.append(("peak_tracked", np.array(ms3["peak_bytes"] is not None and ms3["peak_bytes"] > 0), np.array(True), 0))
    res.append(("bool_bound_sum", np.array(log[-1][2]), np.array(16 * sum(1.5 ** k for k in range(n_pts))), 1e-2))
    return res
