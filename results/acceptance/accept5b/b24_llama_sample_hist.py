"""§6.5 Llama.sample(logits, temperature, top_p) as a distribution: 4000 draws (logits over a
draw dim s) for (T=0.7, top_p=0.8), (T=1.5, top_p=0.95), (T=1.0, top_p=1.0) vs the exact
nucleus distribution in numpy (softmax(l/T), sorted, keep tokens whose mass before them is
<= top_p, renormalise, as Meta's sample_top_p); and greedy=True / temperature=0 = argmax."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
from common import grab

S_ = 4000
LG = np.array([2.0, 1.5, 1.0, 0.2, -0.5, -1.0], np.float32)


def nucleus(T, p):
    z = LG / T
    pr = np.exp(z - z.max()); pr /= pr.sum()
    order = np.argsort(-pr, kind="stable")
    ps = pr[order]; before = np.cumsum(ps) - ps
    keep = before <= p
    out = np.zeros_like(pr); out[order[keep]] = ps[keep]
    return out / out.sum()


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.llm.models.llama import Llama
    from tempo.core.dtype import dtypes
    s = {}
    cases = [(0.7, 0.8), (1.5, 0.95), (1.0, 1.0)]
    ctx = TempoContext(cfg, dim_names=("s",))
    ((sv, S),) = ctx.variables_and_bounds
    with ctx:
        lg = RT.const(LG) + RT.from_symbol(sv).cast(dtypes.float32) * 0.0    # logits over s
        for k, (T, p) in enumerate(cases):
            Llama.sample(lg, temperature=T, top_p=p)[0:S].sink_udf(grab(s, f"c{k}"))
        Llama.sample(lg, greedy=True)[0:S].sink_udf(grab(s, "greedy"))
        Llama.sample(lg, temperature=0.0)[0:S].sink_udf(grab(s, "t0"))
    ctx.compile({S: S_}).execute()
    out = []
    for k, (T, p) in enumerate(cases):
        want = nucleus(T, p)
        freq = np.bincount(s[f"c{k}"].ravel().astype(np.int64), minlength=len(LG)) / S_
        z = np.abs(freq - want) / np.sqrt(np.maximum(want * (1 - want), 1e-9) / S_)
        out += [(f"c{k}_z<5", np.array(np.nan_to_num(z).max() < 5), np.array(True), 0),
                (f"c{k}_excluded_never", freq[want == 0], np.zeros(int((want == 0).sum())), 0)]
    out += [("greedy", s["greedy"].ravel(), np.zeros(S_, s["greedy"].dtype), 0), ("t0", s["t0"].ravel(), np.zeros(S_, s["t0"].dtype), 0)]
    return out


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        ok = a.shape == b_.shape and np.array_equal(a, b_) if a.dtype.kind in "b" or a.size == 0 else a.shape == b_.shape and np.max(np.abs(a - b_)) <= r[3]
        print(r[0], "ok" if ok else ("BAD", a[:8], b_[:8]))
