"""API §0 DataLoader.from_torch_dataset(...).sample((i,)) + a USER-WRITTEN optimizer with a
learning-rate schedule (no scheduler exists in the API, so users write one): parameters are
placeholders over i with requires_grad, w[i+1] = w - lr_i * clip(grad) - lr_i * wd * w, with
lr_i a linear warm-up then cosine decay built from from_symbol(i) (where/cos on tensors) and
the public nn.utils.clip_norm. An MLP classifier (softmax + cross_entropy on one-hot labels) on
a TensorDataset of 24 items, batch 6, shuffle, 8 iterations (2 epochs). Checks: every epoch's
batches are a permutation of the dataset (labels with their own rows); losses, lrs and the
final weights vs torch.optim.SGD(weight_decay) + LambdaLR + clip_grad_norm_ on the same batches."""
import sys, os, math
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

N, BS, I_, LR, WD, WARM = 24, 6, 8, 0.5, 0.01, 2


def lr_at(k):
    return LR * (k + 1) / WARM if k < WARM else LR * 0.5 * (1 + math.cos(math.pi * (k - WARM) / (I_ - WARM)))


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.data import DataLoader
    from tempo.api.nn.utils import clip_norm
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(1)
    XS = rng.normal(size=(N, 4)).astype(np.float32)
    YS = (XS[:, 0] + XS[:, 1] > 0).astype(np.int64) + (XS[:, 2] > 1).astype(np.int64)
    ds = torch.utils.data.TensorDataset(torch.tensor(XS), torch.tensor(YS))
    W1 = (rng.normal(size=(8, 4)) * 0.5).astype(np.float32); W2 = (rng.normal(size=(3, 8)) * 0.5).astype(np.float32)
    s = {}
    ctx = TempoContext(cfg, dim_names=("i",))
    ((i, I),) = ctx.variables_and_bounds
    with ctx:
        x, y = DataLoader.from_torch_dataset(ds, batch_size=BS, shuffle=True).sample((i,))
        w1 = RT.placeholder((8, 4), dtypes.float32, domain=(i,), requires_grad=True)
        w2 = RT.placeholder((3, 8), dtypes.float32, domain=(i,), requires_grad=True)
        w1[0] = RT.const(W1)
        w2[0] = RT.const(W2)
        probs = ((x @ w1.T).tanh() @ w2.T).softmax(-1)
        loss = probs.cross_entropy(y.one_hot(3).cast(dtypes.float32)).mean()
        loss.backward()
        (g1, g2), norm = clip_norm([w1.grad, w2.grad], 1.0)
        k = RT.from_symbol(i).cast(dtypes.float32)
        warm = LR * (k + 1.0) / WARM
        cos = LR * 0.5 * (1.0 + (math.pi * (k - WARM) / (I_ - WARM)).cos())
        lr = (k < WARM).where(warm, cos)
        w1[i + 1] = (w1 - lr * g1 - lr * WD * w1).detach()
        w2[i + 1] = (w2 - lr * g2 - lr * WD * w2).detach()
        for name, v in (("loss", loss), ("lr", lr), ("x", x), ("y", y), ("norm", norm)):
            v[0:I].sink_udf(grab(s, name))
        w1[I - 1].sink_udf(grab(s, "w1_last"))
    ctx.compile({I: I_}).execute()
    xs, ys = s["x"], s["y"].astype(np.int64)
    perm_ok = []
    for ep in range(I_ * BS // N):
        rows = xs[ep * N // BS:(ep + 1) * N // BS].reshape(N, 4); labs = ys[ep * N // BS:(ep + 1) * N // BS].reshape(N)
        idx = [int(np.argmin(np.abs(XS - r).sum(1))) for r in rows]
        perm_ok.append(sorted(idx) == list(range(N)) and np.array_equal(YS[idx], labs) and np.abs(XS[idx] - rows).max() == 0)
    p1, p2 = torch.tensor(W1, requires_grad=True), torch.tensor(W2, requires_grad=True)
    opt = torch.optim.SGD([p1, p2], lr=LR, weight_decay=WD)
    sch = torch.optim.lr_scheduler.LambdaLR(opt, lambda kk: lr_at(kk) / LR)
    losses, lrs, norms = [], [], []
    for it in range(I_):
        pr = ((torch.tensor(xs[it]) @ p1.T).tanh() @ p2.T).softmax(-1)
        L = -(torch.nn.functional.one_hot(torch.tensor(ys[it]), 3) * pr.log()).sum(-1).mean()
        opt.zero_grad(); L.backward()
        norms.append(torch.nn.utils.clip_grad_norm_([p1, p2], 1.0).item())
        losses.append(L.item()); lrs.append(opt.param_groups[0]["lr"]); opt.step(); sch.step()
        if it == I_ - 2:
            w1_last = p1.detach().numpy().copy()
    return [("epochs_are_permutations", np.array(perm_ok), np.ones(len(perm_ok), bool), 0),
            ("lr", s["lr"], np.array(lrs, np.float32), 1e-6), ("loss", s["loss"], np.array(losses, np.float32), 1e-5),
            ("grad_norm", s["norm"], np.array(norms, np.float32), 1e-5), ("w1_at_I-1", s["w1_last"], w1_last, 1e-5)]
