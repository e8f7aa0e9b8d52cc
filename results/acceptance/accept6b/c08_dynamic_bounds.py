"""Boolean bounds (API 7.10) per iteration, vs numpy: over (i, t), acc[i, t] = running sum of
X[i, t] and the episode ends at the first t with acc > thr (a different length per i, the
done point included). Inside the dynamic domain: per-point sink with ts, the episode sum
acc[i, 0:T].sum(0), a backwards recurrence G[i, T-1] = x, G = x + 0.5 G[i, t+1] (dynamic
T - 1 base), a guarded future read x[i, min(t+1, T-1)], the clamped window
acc[i, max(0, t-2):t+1].mean(0); (part 2) an unguarded read x[i, t+1] at the last point
(past the bound: x is defined there) - either the value or a TempoError is acceptable;
(part 3) a gradient through the dynamic-length recurrence w.r.t. a scale leaf s."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch

I_, TM = 3, 12
THR = np.float32(2.5)


def _np(v):
    return np.array(v.detach().cpu().numpy() if hasattr(v, "detach") else v)


def _data():
    rng = np.random.default_rng(2)
    return rng.uniform(0.2, 1.0, size=(I_, TM)).astype(np.float32)


def _lengths(X):
    L = []
    for ii in range(I_):
        c = np.cumsum(X[ii]); L.append(int(np.argmax(c > THR)) + 1)
    return L


def _part1(cfg, res):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    X = _data(); L = _lengths(X)
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    log = {"acc": [], "ep": [], "G": [], "fut": [], "win": []}
    with ctx:
        x = RT.const(X).index(0, i).index(0, t)
        acc = RT.placeholder((), dtypes.float32, domain=(i, t))
        acc[i, 0] = x
        acc[i, t + 1] = acc + x[i, t + 1]
        done = acc > float(THR)
        G = RT.placeholder((), dtypes.float32, domain=(i, t))
        G[i, T - 1] = x
        G[True] = x + 0.5 * G[i, t + 1]
        fut = x[i, ie.min(t + 1, T - 1)]
        win = acc[i, ie.max(0, t - 2):t + 1].mean(0)
        acc.sink_with_ts_udf(lambda v, ts: log["acc"].append((ts[i], ts[t], float(_np(v)))))
        acc[i, 0:T].sum(0).sink_with_ts_udf(lambda v, ts: log["ep"].append((ts[i], float(_np(v)))))
        G.sink_with_ts_udf(lambda v, ts: log["G"].append((ts[i], ts[t], float(_np(v)))))
        fut.sink_with_ts_udf(lambda v, ts: log["fut"].append((ts[i], ts[t], float(_np(v)))))
        win.sink_with_ts_udf(lambda v, ts: log["win"].append((ts[i], ts[t], float(_np(v)))))
    ctx.compile({I: I_, T: done}).execute()
    want = {k: [] for k in log}
    for ii in range(I_):
        n = L[ii]; c = np.cumsum(X[ii, :n].astype(np.float64))
        g = np.zeros(n)
        for tt in reversed(range(n)):
            g[tt] = X[ii, tt] + (0.5 * g[tt + 1] if tt < n - 1 else 0.0)
        want["ep"].append((ii, c.sum()))
        for tt in range(n):
            want["acc"].append((ii, tt, c[tt])); want["G"].append((ii, tt, g[tt]))
            want["fut"].append((ii, tt, X[ii, min(tt + 1, n - 1)]))
            want["win"].append((ii, tt, c[max(0, tt - 2):tt + 1].mean()))
    for k in log:
        res.append((f"p1.{k}", np.array(sorted(log[k])), np.array(want[k]), 1e-4))


def _part2(cfg, res):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core.dtype import dtypes
    from tempo.core.errors import TempoError
    X = _data(); L = _lengths(X)
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    log = []
    try:
        with ctx:
            x = RT.const(X).index(0, i).index(0, t)
            acc = RT.placeholder((), dtypes.float32, domain=(i, t))
            acc[i, 0] = x
            acc[i, t + 1] = acc + x[i, t + 1]
            nxt = x[i, t + 1] - x
            nxt.sink_with_ts_udf(lambda v, ts: log.append((ts[i], ts[t], float(_np(v)))))
        ctx.compile({I: I_, T: acc > float(THR)}).execute()
    except TempoError as e:
        res.append(("p2.past_read_error_is_tempo", np.array(True), np.array(True), 0))
        return
    want = [(ii, tt, X[ii, tt + 1] - X[ii, tt]) for ii in range(I_) for tt in range(L[ii])]
    res.append(("p2.past_read", np.array(sorted(log)), np.array(want), 1e-5))


def _part3(cfg, res):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core.dtype import dtypes
    from tempo.core.errors import UnsupportedError
    X = _data(); L = _lengths(X)
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    st = {}
    try:
        with ctx:
            s = RT.const(np.float32(1.3), requires_grad=True)
            x = RT.const(X).index(0, i).index(0, t)
            acc = RT.placeholder((), dtypes.float32, domain=(i, t))
            acc[i, 0] = x
            acc[i, t + 1] = acc + x[i, t + 1]
            h = RT.placeholder((), dtypes.float32, domain=(i, t))
            h[i, 0] = x * s
            h[i, t + 1] = (h * s + x[i, t + 1]).tanh()
            ep = h[i, 0:T].sum(0)
            ep.backward()
            s.grad.sink_udf(lambda v: st.__setitem__("gs", float(_np(v))))
        ctx.compile({I: I_, T: acc > float(THR)}).execute()
    except UnsupportedError:
        res.append(("p3.grad_unsupported_ok", np.array(True), np.array(True), 0))
        return
    sv = torch.tensor(1.3, requires_grad=True); tot = 0.0
    for ii in range(I_):
        h = torch.tensor(float(X[ii, 0])) * sv; tot = tot + h
        for tt in range(1, L[ii]):
            h = torch.tanh(h * sv + float(X[ii, tt])); tot = tot + h
    tot.backward()
    res.append(("p3.gs", np.array(st["gs"]), np.array(float(sv.grad)), 1e-4))


def program(cfg):
    res = []
    for part in (_part1, _part2, _part3):
        try:
            part(cfg, res)
        except Exception as e:  # noqa: BLE001
            res.append((part.__name__, np.array(f"{type(e).__name__}: {str(e)[:300]}"), np.array("ok"), 0))
    return res
