"""§3 sampling: multinomial (1-D with replacement num_samples=3, 2-D rows), sample_top_p
(nucleus, p=0.5: keeps the tokens whose mass before them is <= p, Meta llama's rule),
sample_likely(above=0.15); each drawn fresh per point of a 4000-point dim; histograms vs the
exact distributions (tolerance 0.035, ~4 sigma). Also the fresh-per-point property (two
consecutive points differ somewhere)."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
from common import grab

N = 4000
P = np.array([0.1, 0.4, 0.2, 0.3], np.float32)
P2 = np.array([[0.7, 0.1, 0.1, 0.1], [0.0, 0.5, 0.0, 0.5]], np.float32)

def hist(a, k=4):
    a = np.asarray(a).astype(np.int64).ravel()
    return np.bincount(a, minlength=k)[:k] / a.size

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    ctx = TempoContext(cfg, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    s = {}
    with ctx:
        w = RT.const(P * 5.0)  # unnormalised weights
        m1 = RT.multinomial(w, 3, replacement=True, domain=(t,))
        m1[0:T].sink_udf(grab(s, "m1"))
        m2 = RT.const(P2).multinomial(1, domain=(t,))
        m2[0:T].sink_udf(grab(s, "m2"))
        probs = RT.const(P) + RT.random((4,), domain=(t,)) * 0.0  # zeros() ignores domain (API 3.2)
        tp = probs.sample_top_p(0.5)
        tp[0:T].sink_udf(grab(s, "tp"))
        sl = probs.sample_likely(0.15)
        sl[0:T].sink_udf(grab(s, "sl"))
    ctx.compile({T: N}).execute()
    m1, m2, tp, sl = (np.asarray(s[k]) for k in ("m1", "m2", "tp", "sl"))
    res = [("m1_shape", np.array(m1.shape), np.array([N, 3]), 0),
           ("m1_hist", hist(m1), P / P.sum(), 0.035),
           ("m1_cols_differ", np.array(bool((m1[:, 0] != m1[:, 1]).any())), np.array(True), 0),
           ("m2_shape", np.array(m2.shape), np.array([N, 2, 1]), 0),
           ("m2_row0", hist(m2[:, 0]), P2[0], 0.035),
           ("m2_row1", hist(m2[:, 1]), P2[1], 0.035),
           ("fresh_per_point", np.array(bool((m1[1:] != m1[:-1]).any())), np.array(True), 0)]
    # nucleus p=0.5: sorted 0.4 (before 0), 0.3 (before 0.4) kept; 0.2 (before 0.7) dropped
    want_tp = np.array([0, 0.4, 0, 0.3]) / 0.7
    res += [("tp_shape", np.array(tp.shape), np.array([N, 1]), 0), ("tp_hist", hist(tp), want_tp, 0.035)]
    want_sl = np.array([0, 0.4, 0.2, 0.3]) / 0.9
    res += [("sl_hist", hist(sl), want_sl, 0.035)]
    return res
