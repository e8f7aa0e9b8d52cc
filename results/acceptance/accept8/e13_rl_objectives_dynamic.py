"""§6.4 objectives over episodes that end at a boolean bound (§7.10): rewards and values over
(i, t) from tables, the episode of iteration i ends at the first t where a running sum
crosses a threshold ({T: (MAXT, done)}); n_step_returns(n=3), bootstrapped_n_step_returns
(n=2), n_step_td_residual (n=2) and gae(lambda 0.8) with T the dynamic bound, and a user
future window r[i, t:min(t+3, T)].sum(0). Reference: numpy implementations of API.md's
definitions on each episode (true bound = the episode's length). Checks: every value of
every episode, the lengths."""
import numpy as np

from common8 import grab_list

I_, MAXT, GAMMA, LAM, THR = 3, 7, 0.9, 0.8, 2.0


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api import min as ie_min
    from tempo.api.rl import bootstrapped_n_step_returns, gae, n_step_returns, n_step_td_residual
    from tempo.core.dtype import dtypes

    g = np.random.default_rng(51)
    Rw = g.uniform(0.2, 0.9, size=(I_, MAXT)).astype(np.float32)
    Vv = g.normal(size=(I_, MAXT)).astype(np.float32)
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    s = {}
    with ctx:
        r = RT.const(Rw).index(0, i).index(0, t)
        v = RT.const(Vv).index(0, i).index(0, t)
        acc = RT.placeholder((), dtypes.float32, domain=(i, t))
        acc[i, 0] = r
        acc[True] = acc[i, t - 1] + r
        done = acc > THR
        outs = {"nsr": n_step_returns(r, t, n=3, gamma=GAMMA),
                "boot": bootstrapped_n_step_returns(r, v, t, n=2, gamma=GAMMA),
                "td": n_step_td_residual(r, v, t, n=2, gamma=GAMMA),
                "gae": gae(r, v, t, gamma=GAMMA, lambda_=LAM),
                "fut": r[i, t:ie_min(t + 3, T)].sum(0)}
        for k, x in outs.items():
            x.sink_udf(grab_list(s, k))
        (RT.from_symbol(i) + RT.from_symbol(t) * 0).sink_udf(grab_list(s, "ep"))
    ctx.compile({I: I_, T: (MAXT, done)}).execute()

    ep = np.array(s["ep"]).astype(int).ravel()
    lens = [int((ep == k).sum()) for k in range(I_)]
    want = {k: [] for k in ("nsr", "boot", "td", "gae", "fut")}
    wl = []
    for k in range(I_):
        n_ = next((j + 1 for j in range(MAXT) if np.cumsum(Rw[k])[j] > THR), MAXT)
        wl.append(n_)
        r_, v_ = Rw[k, :n_].astype(np.float64), Vv[k, :n_].astype(np.float64)
        for t_ in range(n_):
            want["nsr"].append(sum(GAMMA ** m * r_[t_ + m] for m in range(min(3, n_ - t_))))
            L = min(2, n_ - t_)
            b = sum(GAMMA ** m * r_[t_ + m] for m in range(L))
            if t_ + L < n_:
                b += GAMMA ** L * v_[t_ + L]
            want["boot"].append(b)
            want["td"].append(b - v_[t_])
            want["fut"].append(r_[t_:min(t_ + 3, n_)].sum())
        delta = [r_[j] + (GAMMA * v_[j + 1] if j + 1 < n_ else 0.0) - v_[j] for j in range(n_)]
        for t_ in range(n_):
            want["gae"].append(sum((GAMMA * LAM) ** (j - t_) * delta[j] for j in range(t_, n_)))
    out = [("episode lengths", np.array(lens), np.array(wl), 0)]
    for k in want:
        out.append((k, np.array(s[k], np.float64).ravel(), np.array(want[k]), 1e-5))
    return out
