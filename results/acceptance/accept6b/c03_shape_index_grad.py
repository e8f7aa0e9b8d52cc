"""Shape, gather/scatter and matmul/conv ops of API 3.8 under a temporal index, gradients vs
torch autograd (leaves (3, 4) at t and max(0, t-1)): pad (constant with value, reflect,
replicate, pad_dim on a negative dim), cat/stack with dim=-1, split/chunk pieces recombined,
flip of two dims, permute/transpose/T, expand + repeat (short list, 7.14 long list),
repeat_interleave, reshape(-1)/flatten/unflatten, squeeze/unsqueeze, gather with a constant
index, index_select by a 1-D int tensor and a scalar, index_add, scatter_add, module scatter,
index_many, slice_dim with a symbolic start min(t, 1), slice_many, matmul broadcasting
(batched (2,3,4)@(4,) and (3,4)@(2,4,3)), dot of 1-D vectors, conv1d stride/padding/dilation,
conv2d groups, one_hot as a float mask."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch, torch.nn.functional as F
from common6 import catalogue

IDX = np.array([[2, 0, 1, 1], [0, 0, 2, 1]], np.int64)
SEL = np.array([3, 1, 1], np.int64)
SC = np.array([[1, 0], [0, 1], [1, 0]], np.int64)
ADD = np.array([2, 0], np.int64)
KW = np.random.default_rng(5).normal(size=(2, 3, 2)).astype(np.float32)
KG = np.random.default_rng(6).normal(size=(4, 1, 2, 2)).astype(np.float32)


def _sdim(x, t):
    s = min(t, 1)
    return x[:, s:s + 2]


def program(cfg):
    import tempo.api.recurrent_tensor as tpo
    from tempo.api import RecurrentTensor as RT
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    it = lambda a: RT.const(a)
    ops = {
        "pad_const": (lambda a, b, t: a.pad(((1, 0), (2, 1)), value=0.5) * 2.0, lambda a, b, t: F.pad(a, (2, 1, 1, 0), value=0.5) * 2.0),
        "pad_modes": (lambda a, b, t: a.pad((0, (1, 2)), mode="reflect") + b.pad((0, (1, 2)), mode="replicate"),
                      lambda a, b, t: F.pad(a[None], (1, 2), mode="reflect")[0] + F.pad(b[None], (1, 2), mode="replicate")[0]),
        "pad_dim": (lambda a, b, t: a.pad_dim((1, 1), dim=-2, value=-1.0), lambda a, b, t: F.pad(a, (0, 0, 1, 1), value=-1.0)),
        "cat_stack": (lambda a, b, t: RT.cat(a, b, dim=-1).sum(0) + RT.stack([a, b * a], dim=-1).sum((0, 2)).repeat(2),
                      lambda a, b, t: torch.cat([a, b], -1).sum(0) + torch.stack([a, b * a], -1).sum((0, 2)).repeat(2)),
        "split_chunk": (lambda a, b, t: a.split(1, 2)[1] * b.chunk(2, 1)[0] + tpo.split(b, 0, 3)[2].sum() + tpo.split(b, 1, 2)[1],
                        lambda a, b, t: a.split(2, 1)[1] * b.chunk(2, 1)[0] + b.split(1, 0)[2].sum() + b.split(2, 1)[1]),
        "flip_perm": (lambda a, b, t: a.flip((0, 1)).permute((1, 0)) * b.T.flip(0) + b.transpose(0, 1),
                      lambda a, b, t: a.flip((0, 1)).permute(1, 0) * b.T.flip(0) + b.transpose(0, 1)),
        "expand_repeat": (lambda a, b, t: a.sum(1, keepdim=True).expand((2, 3, 4)) + b.repeat((2, 1, 1)) + a.repeat(2).sum(0, keepdim=True).index(0, 0).reshape((1, 1, 4)),
                          lambda a, b, t: a.sum(1, keepdim=True).expand(2, 3, 4) + b.repeat(2, 1, 1) + a.repeat(2, 1).sum(0)[None, None]),
        "rep_inter": (lambda a, b, t: a.repeat_interleave(2, 1) * b.repeat_interleave(2, -1), lambda a, b, t: a.repeat_interleave(2, 1) * b.repeat_interleave(2, -1)),
        "reshape": (lambda a, b, t: a.reshape((-1,)) + b.flatten().flip(0) + (a * b).unflatten(1, (2, 2)).flatten(1).flatten(),
                    lambda a, b, t: a.reshape(-1) + b.flatten().flip(0) + (a * b).unflatten(1, (2, 2)).flatten(1).flatten()),
        "squeeze": (lambda a, b, t: a.unsqueeze(1).unsqueeze(-1).squeeze() * b.unsqueeze(0).squeeze(0), lambda a, b, t: a[:, None, :, None].squeeze() * b),
        "gather": (lambda a, b, t: a.gather(0, it(IDX)) * b.gather(1, it(IDX.T.copy()[:3, :2])).sum(),
                   lambda a, b, t: a.gather(0, torch.tensor(IDX)) * b.gather(1, torch.tensor(IDX.T.copy()[:3, :2])).sum()),
        "index_sel": (lambda a, b, t: a.index(1, it(SEL)) + b.index(1, 2).unsqueeze(1) + a.index(0, -1).sum(),
                      lambda a, b, t: a.index_select(1, torch.tensor(SEL)) + b[:, 2:3] + a[-1].sum()),
        "index_add": (lambda a, b, t: a.index_add(0, it(ADD), b.slice_dim(0, 0, 2) * 2.0, alpha=0.5),
                      lambda a, b, t: a.index_add(0, torch.tensor(ADD), b[0:2] * 2.0, alpha=0.5)),
        "scatter_add": (lambda a, b, t: a.scatter_add(0, it(IDX), b.slice_dim(0, 0, 2)) + tpo.scatter(1, it(SC), b.slice_dim(1, 0, 2)).repeat((1, 2)),
                        lambda a, b, t: a.scatter_add(0, torch.tensor(IDX), b[0:2]) + torch.zeros(3, 2).scatter(1, torch.tensor(SC), b[:, 0:2]).repeat(1, 2)),
        "index_many": (lambda a, b, t: a.index_many([it(SEL[:2] - 1), None]) * b.index_many([1, None]),
                       lambda a, b, t: a[torch.tensor(SEL[:2] - 1)] * b[1]),
        "slice_dim": (lambda a, b, t: a.slice_dim(1, ie.min(t, 1), ie.min(t, 1) + 2) * b.slice_many([ie.slice_(0, 3), ie.slice_(1, 3)]),
                      lambda a, b, t: _sdim(a, t) * b[0:3, 1:3]),
        "matmul_bc": (lambda a, b, t: (RT.stack([a, b]) @ a.index(0, 0)).sum(0) + (a @ RT.stack([b.T, b.T * 2.0])).sum((0, 1)),
                      lambda a, b, t: (torch.stack([a, b]) @ a[0]).sum(0) + (a @ torch.stack([b.T, b.T * 2.0])).sum((0, 1))),
        "dot": (lambda a, b, t: tpo.dot(a.index(0, 1), b.index(0, 2)) * a.index(1, 0), lambda a, b, t: torch.dot(a[1], b[2]) * a[:, 0]),
        "conv1d": (lambda a, b, t: tpo.conv1d(a, it(KW) * b.index(0, 0).index(0, 0), stride=2, padding=1, dilation=1) + tpo.conv1d(a.unsqueeze(0), it(KW), dilation=2).sum(),
                   lambda a, b, t: F.conv1d(a[None], torch.tensor(KW) * b[0, 0], stride=2, padding=1)[0] + F.conv1d(a[None], torch.tensor(KW), dilation=2).sum()),
        "conv2d_g": (lambda a, b, t: tpo.conv2d(RT.stack([a, b]), it(KG), padding=1, groups=2),
                     lambda a, b, t: F.conv2d(torch.stack([a, b])[None], torch.tensor(KG), padding=1, groups=2)[0]),
        "one_hot": (lambda a, b, t: RT.const(np.array([1, 3, 0], np.int64)).one_hot(4).cast(dtypes.float32) * a + b,
                    lambda a, b, t: F.one_hot(torch.tensor([1, 3, 0]), 4).float() * a + b),
    }
    return catalogue(cfg, ops, shape=(3, 4))
