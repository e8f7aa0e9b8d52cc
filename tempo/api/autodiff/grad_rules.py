"""One gradient rule per primitive, keyed by the op's `name` (unary/binary also by `fn`).

A rule maps (op, inputs as read at the op's point, outputs, output grads) to one gradient
per input (None: not differentiable). Rules build RT ops, so gradients are SDG ops too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.tensor_base import record1
from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.core.errors import TempoError
from tempo.core.shape import Shape

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor as RT

Grads = list["RT | None"]
Xs = Sequence["RT"]
Gs = Sequence["RT | None"]
Rule = Callable[[Any, Sequence["RT"], Sequence["RT"], Sequence["RT | None"]], Grads]


def _is_one(d: Any) -> bool:
    return isinstance(d, int) and d == 1


def unbroadcast(g: RT, shape: Shape) -> RT:
    """Sum `g` down to `shape` (numpy broadcasting in reverse): the one place it is done."""
    want, have = list(shape), list(g.shape)
    lead = len(have) - len(want)
    if lead > 0:
        g = g.sum(tuple(range(lead)))
    keep = [i for i, (w, h) in enumerate(zip(want, list(g.shape))) if _is_one(w) and not _is_one(h)]
    if keep:
        g = g.sum(tuple(keep), keepdim=True)
    return g


def _zeros(shape: Shape, dt: Any) -> RT:
    from tempo.api.ops.creation import zeros

    return zeros(tuple(shape), dt)


def _const(v: float, like: RT) -> RT:
    from tempo.api.ops.creation import const

    return const(v, dtype=like.dtype)


# ---------------------------------------------------------------- elementwise
def _binary_parts(fn: str, a: RT, b: RT, y: RT, g: RT) -> tuple[RT | None, RT | None]:
    if fn == "add":
        return g, g
    if fn == "sub":
        return g, -g
    if fn == "mul":
        return g * b, g * a
    if fn == "div":
        return g / b, -g * a / (b * b)
    if fn == "pow":  # torch: 0 where the exponent is 0 / the base is 0 with exponent >= 0
        da = g * (b == 0).where(_const(0.0, y), b * a ** (b - 1))
        zero_base = (a == 0) & (b >= 0)
        db = g * zero_base.where(_const(0.0, y), y * a.ln())
        return da, db
    if fn in ("maximum", "minimum"):  # torch: a tie splits the gradient equally
        win = (a > b) if fn == "maximum" else (a < b)
        half = (a == b).where(_const(0.5, g), _const(0.0, g))
        wa = win.where(_const(1.0, g), half)
        return g * wa, g * (1.0 - wa)
    if fn == "fmod":
        return g, None
    return None, None


def binary_rule(op: ops.BinaryOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    if g is None:
        return [None, None]
    parts = _binary_parts(op.fn, xs[0], xs[1], ys[0], g)
    return [None if p is None else unbroadcast(p, x.shape) for p, x in zip(parts, xs)]


UNARY_RULES: dict[str, Callable[[RT, RT, RT], RT | None]] = {
    "neg": lambda x, y, g: -g,
    "exp": lambda x, y, g: g * y,
    "ln": lambda x, y, g: g / x,
    "sqrt": lambda x, y, g: g / (y * 2.0),
    "sin": lambda x, y, g: g * x.cos(),
    "cos": lambda x, y, g: -g * x.sin(),
    "tan": lambda x, y, g: g * (y * y + 1.0),
    "sigmoid": lambda x, y, g: g * y * (1.0 - y),
    "tanh": lambda x, y, g: g * (1.0 - y * y),
    "relu": lambda x, y, g: g * (x > 0).cast(g.dtype),
    "abs": lambda x, y, g: g * ((x > 0).cast(g.dtype) - (x < 0).cast(g.dtype)),
    "erf": lambda x, y, g: g * (-(x * x)).exp() * (2.0 / math.sqrt(math.pi)),
}


def unary_rule(op: ops.UnaryOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    rule, g = UNARY_RULES.get(op.fn), gs[0]
    return [None if rule is None or g is None else rule(xs[0], ys[0], g)]


def where_rule(op: ops.WhereOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    c, g = xs[0], gs[0]
    if g is None:
        return [None, None, None]
    z = _const(0.0, g)
    return [None, unbroadcast(c.where(g, z), xs[1].shape), unbroadcast(c.where(z, g), xs[2].shape)]


def cast_rule(op: ops.CastOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    return [None if g is None or not dtypes.is_float(xs[0].dtype) else g.cast(xs[0].dtype)]


# ---------------------------------------------------------------- movement
def _perm_inverse(dims: Sequence[int]) -> list[int]:
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return inv


def pad_back(g: RT, dim: int, start: Any, size: Any, length: Any) -> RT:
    """`g` (length `length` along `dim`) placed at `start` of a zero tensor of `size`."""
    from tempo.api.ops.creation import arange, from_expr

    if all(isinstance(v, int) for v in (start, size, length)):
        pad = [(0, 0)] * g.ndim
        pad[dim] = (start, size - start - length)
        return record1(ops.PadOp, [g], padding=tuple(pad))
    idx = arange(length).cast(dtypes.int64)
    if not (isinstance(start, int) and start == 0):
        st = from_expr(start) if not isinstance(start, int) else start
        idx = (idx + st).cast(dtypes.int64)
    shape = list(g.shape)
    shape[dim] = size
    return record1(ops.IndexAddOp, [_zeros(Shape.from_(tuple(shape)), g.dtype), idx, g], dim=dim)


def slice_rule(op: ops.SliceOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    if g is None:
        return [None]
    return [pad_back(g, op.dim, op.start, xs[0].shape[op.dim], op.length)]


def pad_rule(op: ops.PadOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    if g is None:
        return [None]
    shape = list(xs[0].shape)
    if op.mode == "constant":
        for d, (before, _) in enumerate(op.padding):
            g = g.slice_dim(d, before, before + shape[d])
        return [g]
    for d in reversed(range(len(op.padding))):
        before, after = op.padding[d]
        if before or after:
            idx = _pad_index(shape[d], before, after, op.mode)
            from tempo.api.ops.creation import const

            zshape = list(g.shape)
            zshape[d] = shape[d]
            z = _zeros(Shape.from_(tuple(zshape)), g.dtype)
            g = record1(ops.IndexAddOp, [z, const(idx, dtype=dtypes.int64), g], dim=d)
    return [g]


def cat_rule(op: ops.CatOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    if g is None:
        return [None] * len(xs)
    out: Grads = []
    start: Any = 0
    for x in xs:
        n = x.shape[op.dim]
        out.append(g.slice_dim(op.dim, start, start + n).cast(x.dtype))
        start = start + n
    return out


def index_select_rule(op: ops.IndexSelectOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g, (x, idx) = gs[0], xs
    if g is None:
        return [None, None]
    if idx.ndim == 0:
        g, idx = g.unsqueeze(op.dim), idx.reshape((1,))
    z = _zeros(x.shape, g.dtype)
    return [record1(ops.IndexAddOp, [z, idx.cast(dtypes.int64), g], dim=op.dim), None]


def gather_rule(op: ops.GatherOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    if g is None:
        return [None, None]
    z = _zeros(xs[0].shape, g.dtype)
    return [record1(ops.ScatterAddOp, [z, xs[1].cast(dtypes.int64), g], dim=op.dim), None]


def scatter_add_rule(op: ops.ScatterAddOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    if g is None:
        return [None, None, None]
    return [g, None, record1(ops.GatherOp, [g, xs[1].cast(dtypes.int64)], dim=op.dim)]


def index_add_rule(op: ops.IndexAddOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    if g is None:
        return [None, None, None]
    src = record1(ops.IndexSelectOp, [g, xs[1].cast(dtypes.int64)], dim=op.dim)
    return [g, None, src * op.alpha if op.alpha != 1.0 else src]


def _pad_index(n: int, before: int, after: int, mode: str) -> list[int]:
    """Source position of each element of a reflect/replicate-padded dim of size `n`."""
    out = []
    for i in range(-before, n + after):
        if mode == "replicate":
            out.append(min(max(i, 0), n - 1))
        else:
            period = 2 * (n - 1) if n > 1 else 1
            j = abs(i) % period if n > 1 else 0
            out.append(period - j if j >= n else j)
    return out


# ---------------------------------------------------------------- reductions
def _select_rule(op: Any, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    """max/sort: the gradient goes to the selected positions (the indices output)."""
    g = gs[0]
    if g is None:
        return [None]
    idx = ys[1]
    if isinstance(op, ops.MaxOp) and not op.keepdim:
        g, idx = g.unsqueeze(op.dim), idx.unsqueeze(op.dim)
    z = _zeros(xs[0].shape, g.dtype)
    return [record1(ops.ScatterAddOp, [z, idx, g], dim=op.dim)]


def sum_rule(op: ops.SumOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g, x = gs[0], xs[0]
    if g is None or not dtypes.is_float(x.dtype):
        return [None]
    if not op.keepdim:
        shape = [1 if i in op.dims else d for i, d in enumerate(x.shape)]
        g = g.reshape(tuple(shape))
    return [g.expand(tuple(x.shape))]


def cumsum_rule(op: ops.CumsumOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    if g is None:
        return [None]
    flip = record1(ops.FlipOp, [g], dims=(op.dim,))
    return [record1(ops.FlipOp, [flip.cumsum(op.dim)], dims=(op.dim,))]


# ---------------------------------------------------------------- linear algebra
def _mm(a: RT, b: RT) -> RT:
    return record1(ops.MatMulOp, [a, b])


def _t(x: RT) -> RT:
    return x.transpose(-1, -2)


def matmul_rule(op: ops.MatMulOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g, (a, b) = gs[0], xs
    if g is None:
        return [None, None]
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(-1) if b.ndim == 1 else b
    if a.ndim == 1:
        g = g.unsqueeze(-2) if b.ndim > 1 else g.reshape((1,))
    if b.ndim == 1:
        g = g.unsqueeze(-1)
    da, db = _mm(g, _t(b2)), _mm(_t(a2), g)
    da = unbroadcast(da, a2.shape)
    db = unbroadcast(db, b2.shape)
    if a.ndim == 1:
        da = da.reshape(tuple(a.shape))
    if b.ndim == 1:
        db = db.reshape(tuple(b.shape))
    return [da, db]


def _conv(x: RT, w: RT, op: ops.ConvOp, stride: Sequence[int], padding: Sequence[int],
          dilation: Sequence[int], transposed: bool, out_pad: Sequence[int] = ()) -> RT:
    return record1(ops.ConvOp, [x, w], n_dims=op.n_dims, stride=tuple(stride),
                   padding=tuple(padding), dilation=tuple(dilation), transposed=transposed,
                   output_padding=tuple(out_pad), groups=op.groups)


def _static(shape: Shape, op: ops.ConvOp) -> list[int]:
    dims = list(shape)
    if not all(isinstance(d, int) for d in dims):
        raise TempoError(f"the gradient of {op!r} needs static shapes, got {shape}", site=op.site)
    return dims


def _conv_weight_grad(inp: RT, gout: RT, op: ops.ConvOp, k: Sequence[int]) -> RT:
    """d(conv(inp, w))/dw given the output grad `gout` (N, O, *Lout): a correlation of `inp`
    with `gout` in which batch and channels swap roles (the stride becomes the dilation and the
    dilation the stride), one group per conv group; the result is cropped to the kernel `k`."""
    n_sp, g = op.n_dims, op.groups
    n, c, *sp = _static(inp.shape, op)
    _, o, *sp_out = _static(gout.shape, op)
    cg, og = c // g, o // g
    spd = tuple(range(3, 3 + n_sp))
    xi = inp.reshape((n, g, cg, *sp)).permute((2, 1, 0, *spd)).reshape((cg, g * n, *sp))
    wi = gout.reshape((n, g, og, *sp_out)).permute((1, 2, 0, *spd)).reshape((o, n, *sp_out))
    dw = _conv(xi, wi, op, op.dilation, op.padding, op.stride, False)  # (cg, o, *k')
    dw = dw.permute((1, 0, *range(2, 2 + n_sp)))
    for i, kk in enumerate(k):
        if _static(dw.shape, op)[2 + i] != kk:
            dw = dw.slice_dim(2 + i, 0, kk)
    return dw


def conv_rule(op: ops.ConvOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    """conv: the input's grad is the transposed conv of the output grad with the same weight
    (output padding restoring the input size), the weight's a correlation (`_conv_weight_grad`).
    A transposed conv is the adjoint of the conv: the roles of the two convs swap."""
    g, (x, w) = gs[0], xs
    if g is None:
        return [None, None]
    k = _static(w.shape, op)[2:]
    if op.transposed:
        dx = _conv(g, w, op, op.stride, op.padding, op.dilation, False)
        dw = _conv_weight_grad(g, x, op, k)
    else:
        sp, sp_out = _static(x.shape, op)[2:], _static(g.shape, op)[2:]
        out_pad = [n - ((m - 1) * s - 2 * p + d * (kk - 1) + 1) for n, m, s, p, d, kk in
                   zip(sp, sp_out, op.stride, op.padding, op.dilation, k)]
        dx = _conv(g, w, op, op.stride, op.padding, op.dilation, True, out_pad)
        dw = _conv_weight_grad(x, g, op, k)
    return [dx if dtypes.is_float(x.dtype) else None, dw if dtypes.is_float(w.dtype) else None]


def _no_rule(op: Any, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    if any(g is not None for g in gs):
        raise TempoError(f"no gradient rule for {op!r}", site=op.site)
    return [None] * len(xs)


GRAD_RULES: dict[str, Rule] = {
    "ident": lambda op, xs, ys, gs: [gs[0]],
    "reshape": lambda op, xs, ys, gs: [
        None if gs[0] is None else gs[0].reshape(tuple(xs[0].shape))],
    "permute": lambda op, xs, ys, gs: [
        None if gs[0] is None else gs[0].permute(_perm_inverse(op.dims))],
    "expand": lambda op, xs, ys, gs: [None if gs[0] is None else unbroadcast(gs[0], xs[0].shape)],
    "flip": lambda op, xs, ys, gs: [
        None if gs[0] is None else record1(ops.FlipOp, [gs[0]], dims=op.dims)],
    "slice": slice_rule,
    "pad": pad_rule,
    "cat": cat_rule,
    "index_select": index_select_rule,
    "gather": gather_rule,
    "scatter_add": scatter_add_rule,
    "index_add": index_add_rule,
    "unary": unary_rule,
    "binary": binary_rule,
    "where": where_rule,
    "cast": cast_rule,
    "sum": sum_rule,
    "max": _select_rule,
    "sort": _select_rule,
    "cumsum": cumsum_rule,
    "matmul": matmul_rule,
    "conv": conv_rule,
    "map_udf": _no_rule,
}
"""Gradient rule of each differentiable primitive (merges are reversed in `backward`)."""
