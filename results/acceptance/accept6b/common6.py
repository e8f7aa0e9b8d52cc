"""accept6b helpers: a catalogue runner that builds one pair of leaves per op over (t,),
reads them at shifted points, sums a weighted loss per op over t, one backward, and compares
every op's values and leaf grads with torch autograd run point by point."""
import numpy as np, torch


def np_of(v):
    if hasattr(v, "detach"):
        v = v.detach().cpu()
        if v.dtype == torch.bfloat16:
            v = v.float()
        return v.numpy()
    return np.array(v)


def catalogue(cfg, ops, T_=4, shape=(5,), seed=0, tol=2e-4):
    """ops: name -> (tempo_fn(a, b_prev, t_f), torch_fn(a, b_prev)) where a = leaf A * (1 +
    0.1 t) at t and b_prev = leaf B at max(0, t-1) (times (1 - 0.05 t_prev)); each op's
    output is dotted with fixed weights and summed over t."""
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(seed)
    ctx = TempoContext(cfg, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    data = {n: (rng.uniform(0.5, 1.5, size=shape).astype(np.float32),
                rng.uniform(0.5, 1.5, size=shape).astype(np.float32)) for n in ops}
    store, leaves, outs = {}, {}, {}
    with ctx:
        tf = RT.from_symbol(t).cast(dtypes.float32)
        total = None
        for n, (tfn, _) in ops.items():
            A, Bv = data[n]
            la = RT.const(A, requires_grad=True)
            lb = RT.const(Bv, requires_grad=True)
            a = la * (1.0 + 0.1 * tf)
            bb = lb * (1.0 - 0.05 * tf)
            bprev = bb[ie.max(0, t - 1)]
            y = tfn(a, bprev, t)
            outs[n] = y
            W = np.asarray(rng.normal(size=tuple(int(s) for s in y.shape)), np.float32)
            data[n] = (A, Bv, W)
            lo = (y * RT.const(W)).sum()
            total = lo if total is None else total + lo
            leaves[n] = (la, lb)
        loss = total[0:T].sum(0)
        loss.backward()
        for n, (la, lb) in leaves.items():
            outs[n][0:T].sink_udf(lambda v, n=n: store.__setitem__(("y", n), np_of(v)))
            for k, leaf in (("ga", la), ("gb", lb)):
                if leaf.grad is None:   # an unused leaf has no grad, as in torch
                    store[(k, n)] = np.zeros(shape, np.float32)
                else:
                    leaf.grad.sink_udf(lambda v, n=n, k=k: store.__setitem__((k, n), np_of(v)))
    ctx.compile({T: T_}).execute()
    res = []
    for n, (_, rfn) in ops.items():
        A, Bv, W = data[n]
        at = torch.tensor(A, requires_grad=True); bt = torch.tensor(Bv, requires_grad=True)
        ys, tot = [], 0.0
        for tt in range(T_):
            a = at * (1.0 + 0.1 * tt)
            tp = max(0, tt - 1)
            bp = bt * (1.0 - 0.05 * tp)
            y = rfn(a, bp, tt)
            ys.append(y.detach())
            tot = tot + (y * torch.tensor(W)).sum()
        if tot.requires_grad:
            tot.backward()
        ga = at.grad if at.grad is not None else torch.zeros_like(at)
        gb = bt.grad if bt.grad is not None else torch.zeros_like(bt)
        yw = torch.stack(ys).numpy()
        sc = lambda x: tol * max(1.0, float(np.abs(x).max()))
        res.append((f"{n}.y", store[("y", n)], yw, sc(yw)))
        res.append((f"{n}.ga", store[("ga", n)], ga.numpy(), sc(ga.numpy())))
        res.append((f"{n}.gb", store[("gb", n)], gb.numpy(), sc(gb.numpy())))
    return res
