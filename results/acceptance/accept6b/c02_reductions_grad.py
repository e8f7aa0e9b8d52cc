"""Reductions and the softmax family of API 3.8 under a temporal index, gradients vs torch
autograd (leaves (3, 4), read at t and max(0, t-1)): sum/mean with keepdim and negative dims
and tuples, std(correction=0/1/2) over dims, max/min with dim + keepdim (values and the
indices used as a float), max/min/argmax without dim (all dims, 7.8), logsumexp with
sum_dims tuple + keepdim, cumsum/cumprod (negative dim, positive=True and signed values),
l_norm n=1/2/3, softmax dim=0 and -1, stable=False, cross_entropy(class_dim=0),
discounted_sum (7.4) and discounted_cum_sum (no symbolic slice), sort descending values."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import torch
from common6 import catalogue


def _disc_sum(x, g, dim):
    n = x.shape[dim]
    w = torch.tensor([g ** k for k in range(n)], dtype=x.dtype)
    sh = [1] * x.dim(); sh[dim] = n
    return (x * w.reshape(sh)).sum(dim)


def _disc_cum(x, g, dim):
    x = x.movedim(dim, 0); out = []; acc = torch.zeros_like(x[0])
    for k in reversed(range(x.shape[0])):
        acc = x[k] + g * acc; out.append(acc)
    return torch.stack(out[::-1]).movedim(0, dim)


def program(cfg):
    import tempo.api.recurrent_tensor as tpo
    ops = {
        "sum_kd": (lambda a, b, t: a.sum(-1, keepdim=True) * b, lambda a, b, t: a.sum(-1, keepdim=True) * b),
        "sum_tuple": (lambda a, b, t: (a * b).sum((0, -1)) + a.sum(()).sum(0).sum(), lambda a, b, t: (a * b).sum((0, -1)) + a.sum(0).sum()),
        "mean_kd": (lambda a, b, t: a.mean(0, keepdim=True) - b.mean((-2, -1), keepdim=True), lambda a, b, t: a.mean(0, keepdim=True) - b.mean((-2, -1), keepdim=True)),
        "std": (lambda a, b, t: a.std(1, correction=0) + b.std(0).sum() + (a * b).std((0, 1), correction=2),
                lambda a, b, t: a.std(1, correction=0) + b.std(0).sum() + (a * b).std((0, 1), correction=2)),
        "max_dim": (lambda a, b, t: (a * b).max(-1, keepdim=True)[0] + (a - b).min(0)[0].sum(),
                    lambda a, b, t: (a * b).max(-1, keepdim=True)[0] + (a - b).min(0)[0].sum()),
        "max_idx": (lambda a, b, t: (a - b).max(1)[1].cast(a.dtype) + a.argmin(0).cast(a.dtype).sum(),
                    lambda a, b, t: (a - b).max(1)[1].float() + a.argmin(0).float().sum()),
        "max_all": (lambda a, b, t: tpo.max(a * b) + tpo.min(a - b), lambda a, b, t: (a * b).max() + (a - b).min()),
        "argmax_all": (lambda a, b, t: tpo.argmax(a - b).cast(a.dtype) * a.sum(), lambda a, b, t: (a - b).argmax().float() * a.sum()),
        "lse": (lambda a, b, t: a.logsumexp((0, 1)) + b.logsumexp(-1, keepdim=True), lambda a, b, t: a.logsumexp((0, 1)) + b.logsumexp(-1, keepdim=True)),
        "cumsum": (lambda a, b, t: a.cumsum(-2) * b.cumsum(1), lambda a, b, t: a.cumsum(-2) * b.cumsum(1)),
        "cumprod": (lambda a, b, t: a.cumprod(1, positive=True) + (a - b).cumprod(0), lambda a, b, t: a.cumprod(1) + (a - b).cumprod(0)),
        "l_norm": (lambda a, b, t: a.l_norm(1) + b.l_norm(2, dims=0) .sum() + (a - b).l_norm(3, dims=(0, 1)),
                   lambda a, b, t: a.abs().sum() + b.norm(2, dim=0).sum() + (a - b).norm(3)),
        "softmax": (lambda a, b, t: (a * b).softmax(0) + a.softmax(-1, stable=False), lambda a, b, t: torch.softmax(a * b, 0) + torch.softmax(a, -1)),
        "xent": (lambda a, b, t: tpo.cross_entropy(a.softmax(0), b.softmax(0), class_dim=0),
                 lambda a, b, t: -(torch.softmax(b, 0) * torch.log(torch.softmax(a, 0))).sum(0)),
        "disc_sum": (lambda a, b, t: a.discounted_sum(0.9, dim=1) + b.discounted_sum(0.5, 0).sum(), lambda a, b, t: _disc_sum(a, 0.9, 1) + _disc_sum(b, 0.5, 0).sum()),
        "disc_cum": (lambda a, b, t: a.discounted_cum_sum(0.8, dim=1) * b, lambda a, b, t: _disc_cum(a, 0.8, 1) * b),
        "sort": (lambda a, b, t: (a * b).sort(-1, descending=True)[0] + a.sort(0)[0], lambda a, b, t: torch.sort(a * b, -1, descending=True)[0] + torch.sort(a, 0)[0]),
    }
    return catalogue(cfg, ops, shape=(3, 4))
