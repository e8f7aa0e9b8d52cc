"""Reductions over spatial dims (reduce the domain by slicing it into a spatial dim first)."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.tensor_base import RTBase, lift, record, record1
from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.core.errors import ArgumentError, ShapeError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor
    from tempo.api.tensor_self import TensorSelf


def _dims(dims: int | Sequence[int] | None, of: int | RTBase | TensorSelf) -> tuple[int, ...]:
    """`dims` normalised for a tensor `of` (or a rank); an error names the tensor, so a
    user who meant a symbolic dim (`x.sum(1)` on a `(t,)`-domain vector) sees which one."""
    ndim = of if isinstance(of, int) else of.ndim
    if dims is None:
        return tuple(range(ndim))
    ds = [dims] if isinstance(dims, int) else list(dims)
    if isinstance(dims, str) or not all(isinstance(d, numbers.Integral)
                                        and not isinstance(d, bool) for d in ds):
        raise ShapeError(f"dims must be an int or a tuple of ints, got {dims!r}",
                         site=user_site())
    try:
        if ndim == 0 and ds and isinstance(of, RTBase):
            # torch lets dim 0 / -1 name a 0-d tensor's "only dim"; here the kernels then
            # addressed a dim the point does not have (BackendError with an internal dim
            # number under vectorisation, IndexError in max), and on a per-point scalar
            # `r.cumsum(0)` almost always means the time series: say so
            raise ShapeError(f"dim {ds[0]} is out of range for a tensor of 0 dims (a scalar "
                             "at each point)")
        return tuple(sorted({ops.norm_dim(d, ndim) for d in ds}))
    except ShapeError as exc:
        why = exc.args[0]
        if isinstance(of, RTBase):
            from tempo.api.tensor_base import operand_label

            site = user_site()
            hint = ("; symbolic dims are not reduced by dim number: slice them into spatial "
                    "dims first, e.g. x[0:T].sum(0)") if not of.domain.is_empty() else ""
            why = f"{why} ({operand_label(of, site)}{hint})"
        raise ShapeError(why, site=user_site()) from None


def _is_tensor_like(v: Any) -> bool:
    from tempo.api.tensor_base import RTBase

    return isinstance(v, RTBase | float) or (isinstance(v, list))


def _elementwise_extreme(xs: list[Any], which: str) -> tuple[Any, Any]:
    from tempo.api.ops.movement import stack
    from tempo.api.tensor_base import RTBase, lift

    ts = [lift(x) for x in xs]
    shape = ts[0].shape
    for t in ts[1:]:
        shape = type(shape).broadcast(shape, t.shape)
    dt = dtypes.upcast(*(t.dtype for t in ts))
    st = stack([t.cast(dt).expand(shape) for t in ts], dim=0)
    assert isinstance(st, RTBase)
    return st.max(0) if which == "max" else st.min(0)


def _order_reversed(x: Any) -> tuple[Any, Any]:
    """An order-reversing map (and its inverse): ~v for ints (no overflow at the minimum),
    not for bools, negation for floats."""
    dt = x.dtype
    if dtypes.is_bool(dt):
        return ~x, lambda v: ~v
    if dtypes.is_integer(dt):
        return -1 - x, lambda v: -1 - v  # = ~x; may be computed in a wider dtype
    return -x, lambda v: -v


def _gamma_powers(gamma: float, n: Any, dt: Any) -> Any:
    from tempo.api.ops.creation import arange

    ft = dt if dtypes.is_float(dt) else dtypes.least_upper_float(dt)
    return ftype_const(gamma, ft) ** arange(n).cast(ft)


def ftype_const(v: Any, dt: Any) -> Any:
    """`v` (a Python number or a RecurrentTensor, e.g. a learned or per-point gamma) in
    float dtype `dt`."""
    from tempo.api.ops.creation import const

    if isinstance(v, RTBase):
        return lift(v).cast(dt)
    return const(v, dtype=dt)


def _slice_var(x: Any, d: int) -> Any:
    """The variable of the symbolic slice that produced leading dim `d`, if any."""
    from tempo.core import index_expr as ie

    if not x.is_indexed:
        return None
    slices = [(m, v) for m, v in zip(x.read_expr, x.unindexed_domain.variables)
              if isinstance(m, ie.Slice)]
    return slices[d][1] if d < len(slices) else None


def _torch_dim(dims: Any, dim: Any, name: str, axis: Any = None) -> Any:
    """`dims`, or torch's spelling `dim=` of it (what a PyTorch user types first), or
    numpy's and jax's `axis=`."""
    given = [v for v in (dims, dim, axis) if v is not None]
    if len(given) > 1:
        raise ArgumentError(f"{name}() takes one of dims, dim (torch's spelling) and axis "
                            f"(numpy's), not several", site=user_site())
    return given[0] if given else None


def _axis(dim: int, axis: int | None, name: str, default: int = -1) -> int:
    """`dim`, or numpy's and jax's spelling `axis=` of it (`jax.nn.softmax(x, axis=0)`)."""
    if axis is None:
        return dim
    if dim != default:
        raise ArgumentError(f"{name}() takes dim or axis (numpy's spelling), not both",
                            site=user_site())
    return axis


class ReduceOps:
    """Reduction methods mixed into RecurrentTensor."""

    def sum(self: TensorSelf, dims: int | Sequence[int] | None = None,
            keepdim: bool = False, *, dim: int | Sequence[int] | None = None,
            axis: int | Sequence[int] | None = None) -> RecurrentTensor:
        ds = _dims(_torch_dim(dims, dim, "sum", axis), self)
        if not ds:
            return self.ident()
        return record1(ops.SumOp, [self], dims=ds, keepdim=keepdim)

    def mean(self: TensorSelf, dims: int | Sequence[int] | None = None,
             keepdim: bool = False, *, dim: int | Sequence[int] | None = None,
             axis: int | Sequence[int] | None = None) -> RecurrentTensor:
        ds = _dims(_torch_dim(dims, dim, "mean", axis), self)
        n: Any = 1
        for d in ds:
            n = n * self.shape[d]
        x = self if dtypes.is_float(self.dtype) else self.cast(dtypes.default_float)
        total = x.sum(ds, keepdim)
        if isinstance(n, int):
            return total / n
        from tempo.api.ops.creation import from_expr

        return total / from_expr(n).cast(total.dtype)

    def max(self: TensorSelf, dim: Any = None, keepdim: Any = False, *more: Any) -> Any:
        """Without `dim`, the max over all dims; with `dim`, (values, indices) (API §7.8).
        Given tensors instead of a dim, the elementwise max over all of them, still as
        (values, indices-of-the-winning-tensor)."""
        if _is_tensor_like(dim):
            return _elementwise_extreme([self, dim, *([keepdim] if keepdim is not False else []),
                                         *more], "max")
        if dim is None:
            flat = self.flatten()
            return record(ops.MaxOp, [flat], dim=0, keepdim=False)[0]
        d = _dims(dim, self)[0]
        vals, idx = record(ops.MaxOp, [self], dim=d, keepdim=keepdim)
        return vals, idx

    def min(self, dim: Any = None, keepdim: Any = False, *more: Any) -> Any:
        if _is_tensor_like(dim):
            return _elementwise_extreme([self, dim, *([keepdim] if keepdim is not False else []),
                                         *more], "min")
        x, back = _order_reversed(self)
        if dim is None:
            return back(x.max())
        vals, idx = x.max(dim, keepdim)
        return back(vals), idx

    def argmax(self: TensorSelf, dim: int | None = None, keepdim: bool = False) -> RecurrentTensor:
        if dim is None:
            return record(ops.MaxOp, [self.flatten()], dim=0, keepdim=False)[1]
        return self.max(dim, keepdim)[1]

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> RecurrentTensor:
        return _order_reversed(self)[0].argmax(dim, keepdim)

    def cumsum(self: TensorSelf, dim: int = -1) -> RecurrentTensor:
        d = _dims(dim, self)[0]
        return record1(ops.CumsumOp, [self], dim=d)

    def softmax(self, dim: int = -1, stable: bool = True, *,
                axis: int | None = None) -> RecurrentTensor:
        """exp(x - max) / sum, computed in at least float32 and cast back. The stable form
        is one fused primitive (the backend's softmax kernel, its own exact gradient)."""
        dim = _axis(dim, axis, "softmax")
        x = lift(self)
        orig = x.dtype
        x = x if dtypes.is_float(orig) and orig.repr_bytes >= 4 else x.cast(dtypes.float32)
        d = _dims(dim, x)[0]
        if stable:
            out = record1(ops.SoftmaxOp, [x], dim=d)
        else:
            e = x.exp()
            out = e / e.sum(d, keepdim=True)
        return out.cast(orig) if dtypes.is_float(orig) else out

    def log_softmax(self, dim: int = -1, *, axis: int | None = None) -> RecurrentTensor:
        """x - logsumexp(x) along `dim` (stable, one fused primitive), in at least float32
        and cast back."""
        dim = _axis(dim, axis, "log_softmax")
        x = lift(self)
        orig = x.dtype
        x = x if dtypes.is_float(orig) and orig.repr_bytes >= 4 else x.cast(dtypes.float32)
        out = record1(ops.SoftmaxOp, [x], dim=_dims(dim, x)[0], log=True)
        return out.cast(orig) if dtypes.is_float(orig) else out

    def logsumexp(self: TensorSelf, sum_dims: int | Sequence[int] | None = None,
                  keepdim: bool = False) -> RecurrentTensor:
        ds = _dims(sum_dims, self)
        m = lift(self)
        for d in ds:
            m = m.max(d, keepdim=True)[0]
        m = m.detach()
        m = m.isinf().where(0.0, m)  # all -inf (or an inf) must not become inf - inf = nan
        out = (self - m).exp().sum(ds, keepdim=True).ln() + m
        return out if keepdim else out.squeeze(ds)

    def std(self: TensorSelf, dims: int | Sequence[int] | None = None, correction: float = 1.0,
            keepdim: bool = False, *, dim: int | Sequence[int] | None = None,
            axis: int | Sequence[int] | None = None) -> RecurrentTensor:
        """sqrt(sum((x - mean)^2) / (N - correction)) (API §7.5: `correction` honoured)."""
        ds = _dims(_torch_dim(dims, dim, "std", axis), self)
        n: Any = 1
        for d in ds:
            n = n * self.shape[d]
        mu = self.mean(ds, keepdim=True)
        sq = ((self - mu) ** 2).sum(ds, keepdim=keepdim)
        if isinstance(n, int):
            return (sq / (n - correction)).sqrt()
        from tempo.api.ops.creation import from_expr

        return (sq / (from_expr(n).cast(sq.dtype) - correction)).sqrt()

    def var(self: TensorSelf, dims: int | Sequence[int] | None = None, correction: float = 1.0,
            keepdim: bool = False, *, dim: int | Sequence[int] | None = None,
            axis: int | Sequence[int] | None = None) -> RecurrentTensor:
        return self.std(_torch_dim(dims, dim, "var", axis), correction, keepdim) ** 2

    def prod(self: TensorSelf, dims: int | None = None, keepdim: bool = False) -> RecurrentTensor:
        """Product over one dim (or all), via cumprod's last element."""
        if dims is None:
            out = self.flatten().cumprod(0).index(0, -1)
            return out.reshape((1,) * self.ndim) if keepdim else out
        d = _dims(dims, self)[0]
        out = self.cumprod(d).index(d, -1)
        return out.unsqueeze(d) if keepdim else out

    def cumprod(self: TensorSelf, dim: int = -1, positive: bool = False) -> RecurrentTensor:
        """exp(cumsum(log|x|)) with the sign from a cumulative count of negatives and zeros
        from a cumulative count of zeros; ints are rounded back (exact for small products)."""
        from tempo.api.ops.elementwise import _float

        d = _dims(dim, self)[0]
        orig = self.dtype
        x = _float(self) if not dtypes.is_integer(orig) else self.cast(dtypes.float64)
        if positive:
            out = x.ln().cumsum(d).exp()
        else:
            zero = x == 0.0
            mag = zero.where(1.0, x.abs()).ln().cumsum(d).exp()
            negs = (x < 0.0).cumsum(d)
            sign = 1.0 - (negs % 2).cast(x.dtype) * 2.0
            out = (zero.cumsum(d) > 0).where(0.0, mag * sign)
        if dtypes.is_integer(orig) or dtypes.is_bool(orig):
            return out.round().cast(ops.accumulate_dtype(orig))
        return out

    def l_norm(self, n: float = 2, dims: int | Sequence[int] | None = None,
               keepdim: bool = False) -> RecurrentTensor:
        """(sum |x|^n)^(1/n) over `dims` (all by default)."""
        from tempo.api.ops.elementwise import _float

        a = _float(self).abs()
        if n == 1:
            return a.sum(dims, keepdim)
        return (a ** n).sum(dims, keepdim) ** (1.0 / n)

    def discounted_sum(self: TensorSelf, gamma: Any, dim: int = 0,
                       keepdim: bool = False) -> RecurrentTensor:
        """Σ_k γ^k x_k along `dim` (API §7.4: as documented, not the original's γ^(k+1))."""
        d = _dims(dim, self)[0]
        w = _gamma_powers(gamma, self.shape[d], self.dtype)
        w = w.reshape((-1,) + (1,) * (self.ndim - d - 1))
        return (self * w).sum(d, keepdim)

    def discounted_cum_sum(self, gamma: Any, dim: int = 0,
                           keep_symbolic_dim: bool = True) -> RecurrentTensor:
        """G_k = Σ_{j>=k} γ^(j-k) x_j along `dim`, as a (k, j) weight matrix times x.
        With `keep_symbolic_dim`, a dim that came from a symbolic slice `0:T` is read back at
        the slice's variable, so the result is per point of that variable."""
        from tempo.api.ops.creation import arange

        src = lift(self)
        d = _dims(dim, src)[0]
        n = src.shape[d]
        x = src if d == src.ndim - 1 else src.transpose(d, -1)
        ks = arange(n).cast(dtypes.least_upper_float(x.dtype))
        diff = ks.unsqueeze(0) - ks.unsqueeze(1)  # [k, j] = j - k
        ftype = x.dtype if dtypes.is_float(x.dtype) else dtypes.least_upper_float(x.dtype)
        w = (diff >= 0).where(ftype_const(gamma, ftype) ** diff.cast(ftype), 0.0)
        out = (x.unsqueeze(-2) * w).sum(-1)
        out = out if d == src.ndim - 1 else out.transpose(d, -1)
        var = _slice_var(src, d) if keep_symbolic_dim else None
        return out.index(d, var) if var is not None else out

    def sort(self: TensorSelf, dim: int = -1, descending: bool = False,
             stable: bool = False) -> Any:
        """(values, indices) as torch.sort, including stable tie order."""
        d = _dims(dim, max(self.ndim, 1))[0]
        x = self if self.ndim > 0 else self.reshape((1,))
        vals, idx = record(ops.SortOp, [x], dim=d, descending=descending, stable=stable)
        if self.ndim == 0:
            return vals.reshape(()), idx.reshape(())
        return vals, idx
