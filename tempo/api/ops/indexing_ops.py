"""Data-dependent spatial indexing: gather, scatter, index_add and one_hot.

Primitives are `GatherOp`, `ScatterAddOp`, `IndexAddOp` and `IndexSelectOp`; scatter into
zeros and one_hot are composed from them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tempo.api.tensor_base import active_ctx, label, lift, record1
from tempo.core import index_expr as ie
from tempo.core import naming, ops
from tempo.core.dtype import dtypes
from tempo.core.errors import DTypeError, ShapeError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def _norm(dim: int, ndim: int) -> int:
    try:
        return ops.norm_dim(dim, ndim)
    except ShapeError as exc:
        raise ShapeError(exc.args[0], site=user_site()) from None


def _idx(index: Any) -> RecurrentTensor:
    from tempo.api.ops.creation import from_expr

    return from_expr(index) if isinstance(index, ie.IntIndexValue) else lift(index)


def gather(src: Any, dim: int, index: Any) -> RecurrentTensor:
    """torch.gather; a 1-d `src` falls back to `index` (index_select)."""
    src, idx = lift(src), _idx(index)
    d = _norm(dim, src.ndim)
    if src.ndim == 1 and idx.ndim != 1:
        return src.index(d, idx)
    return record1(ops.GatherOp, [src, idx], dim=d)


def scatter_add(sink: Any, dim: int, index: Any, src: Any) -> RecurrentTensor:
    """torch.scatter_add: sink[index[i][j]][j] += src[i][j] along `dim`."""
    sink, src = lift(sink), lift(src)
    return record1(ops.ScatterAddOp, [sink, _idx(index), src], dim=_norm(dim, sink.ndim))


def scatter(dim: int, index: Any, src: Any) -> RecurrentTensor:
    """`src` scattered into zeros of its shape (module form of API §3.8)."""
    from tempo.api.ops.creation import zeros

    src = lift(src)
    return scatter_into(zeros(src.shape, src.dtype), dim, index, src)


def scatter_into(x: Any, dim: int, index: Any, src: Any) -> RecurrentTensor:
    """torch.Tensor.scatter: x with x[index[i][j]][j] = src[i][j] along `dim`, as a
    where() of two scatter_adds (values, and a mask of hit positions)."""
    from tempo.api.ops.creation import ones, zeros
    from tempo.core.dtype import dtypes

    x, src, idx = lift(x), lift(src), _idx(index)
    dt = dtypes.int8 if dtypes.is_bool(x.dtype) else x.dtype
    hits = scatter_add(zeros(x.shape, dtypes.default_int), dim, idx,
                       ones(idx.shape, dtypes.default_int))
    vals = scatter_add(zeros(x.shape, dt), dim, idx, src.cast(dt))
    return (hits > 0).where(vals.cast(x.dtype), x)


def index_add(x: Any, dim: int, index: Any, src: Any, alpha: float = 1.0) -> RecurrentTensor:
    """torch.index_add: x[..., index[i], ...] += alpha * src[..., i, ...]. A 0-d index adds
    one slice: `src` either lacks `dim` or keeps it with size 1 (torch's 1-element index)."""
    x, src, idx = lift(x), lift(src), _idx(index)
    if idx.ndim == 0 and src.ndim == x.ndim and x.ndim > 0:
        idx = idx.reshape((1,))
    d = _norm(dim, x.ndim)
    if not active_ctx().execution_config.enable_index_ops:
        return _index_add_by_scatter(x, d, idx, src, alpha)
    return record1(ops.IndexAddOp, [x, idx, src], dim=d, alpha=alpha)


def _spread(idx: Any, like: Any, d: int) -> Any:
    """A 1-d index along dim `d`, broadcast to the shape of `like` (gather/scatter form)."""
    shape = [1] * like.ndim
    shape[d] = -1
    return idx.reshape(tuple(shape)).expand(tuple(like.shape))


def index_select_by_gather(x: Any, d: int, idx: Any) -> RecurrentTensor:
    """`x.index_select(d, idx)` as a gather (`enable_index_ops=False`, API.md §4.2)."""
    one = idx.ndim == 0
    i = idx.reshape((1,)) if one else idx
    shape = list(x.shape)
    shape[d] = i.shape[0]
    like = x.slice_dim(d, 0, 1).expand(tuple(shape))
    out = gather(x, d, _spread(i, like, d))
    return out.squeeze(d) if one else out


def _index_add_by_scatter(x: Any, d: int, idx: Any, src: Any, alpha: float) -> RecurrentTensor:
    """`x.index_add(d, idx, src, alpha)` as a scatter_add (`enable_index_ops=False`)."""
    if idx.ndim == 0:
        idx, src = idx.reshape((1,)), src.unsqueeze(d)
    if alpha != 1:
        src = (src * alpha).cast(x.dtype)
    return scatter_add(x, d, _spread(idx, src, d), src)


def one_hot(class_int: Any, num_classes: int) -> RecurrentTensor:
    """arange(num_classes) == class_int[..., None], in the dtype of `class_int`."""
    from tempo.api.ops.creation import arange

    c = _idx(class_int)
    if not dtypes.is_integer(c.dtype):
        raise DTypeError(f"one_hot needs integer classes, got {naming.dtype_word(c.dtype)} "
                         f"({label(c)}): cast first, e.g. x.cast(dtypes.int64)",
                         site=user_site())
    hot = arange(num_classes, dtype=c.dtype) == c.unsqueeze(-1)
    return hot.cast(c.dtype)


class IndexingOps:
    """Gather/scatter methods mixed into RecurrentTensor."""

    def gather(self, dim: int, index: Any) -> RecurrentTensor:
        return gather(self, dim, index)

    def scatter_add(self, dim: int, index: Any, src: Any) -> RecurrentTensor:
        return scatter_add(self, dim, index, src)

    def scatter(self, dim: int, index: Any, src: Any) -> RecurrentTensor:
        """Method form (API §7.2): a copy of `self` with src written at `index` along `dim`."""
        return scatter_into(self, dim, index, src)

    def index_add(self, dim: int, index: Any, src: Any, alpha: float = 1.0) -> RecurrentTensor:
        return index_add(self, dim, index, src, alpha)

    spatial_index_add = index_add

    def one_hot(self, num_classes: int) -> RecurrentTensor:
        return one_hot(self, num_classes)
