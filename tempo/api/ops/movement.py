"""Shape and movement ops: reshape, permute, expand, squeeze, cat/stack, slicing, indexing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.tensor_base import RTBase, lift, record1
from tempo.core import index_expr as ie
from tempo.core import ops
from tempo.core.errors import ShapeError, user_site
from tempo.core.shape import Shape, ShapeLike

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def _norm(dim: int, ndim: int) -> int:
    try:
        return ops.norm_dim(dim, ndim)
    except ShapeError as exc:
        raise ShapeError(exc.args[0], site=user_site()) from None


def _tensors(xs: Any, more: tuple) -> list[RTBase]:
    items = list(xs) if isinstance(xs, list | tuple) else [xs]
    return [lift(x) for x in items + list(more)]


def cat(xs: Any, *more: Any, dim: int = 0) -> RecurrentTensor:
    ts = _tensors(xs, more)
    if len(ts) == 1:
        return ts[0]  # type: ignore[return-value]
    from tempo.api.ops.elementwise import cast
    from tempo.core.dtype import dtypes

    dt = dtypes.upcast(*(t.dtype for t in ts))
    ts = [cast(t, dt) for t in ts]
    return record1(ops.CatOp, ts, dim=_norm(dim, ts[0].ndim))


def stack(xs: Any, *more: Any, dim: int = 0) -> RecurrentTensor:
    ts = _tensors(xs, more)
    d = _norm(dim, ts[0].ndim + 1)
    return cat([t.unsqueeze(d) for t in ts], dim=d)  # type: ignore[attr-defined]


class MovementOps:
    """Shape methods mixed into RecurrentTensor."""

    cat = staticmethod(cat)
    stack = staticmethod(stack)

    def ident(self) -> RecurrentTensor:
        """Materialise this (possibly indexed) read as a tensor of its own."""
        return record1(ops.IdentOp, [self])

    def reshape(self, shape: ShapeLike) -> RecurrentTensor:
        dims = list(Shape.from_(shape)) if not isinstance(shape, int) else [shape]
        if sum(1 for d in dims if isinstance(d, int) and d == -1) > 1:
            raise ShapeError(f"reshape to {shape}: at most one -1", site=user_site())
        if -1 in [d for d in dims if isinstance(d, int)]:
            known = 1
            for d in dims:
                if not (isinstance(d, int) and d == -1):
                    known = known * d
            total = self.shape.prod()  # type: ignore[attr-defined]
            dims = [total // known if isinstance(d, int) and d == -1 else d for d in dims]
            dims = [ie.lift_to_int_ie(d).try_eval() if not isinstance(d, int) and
                    ie.lift_to_int_ie(d).try_eval() is not None else d for d in dims]
        return record1(ops.ReshapeOp, [self], shape=Shape.from_(tuple(dims)))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> RecurrentTensor:
        shp = list(self.shape)  # type: ignore[attr-defined]
        if not shp:
            return self.reshape((1,))
        s, e = _norm(start_dim, len(shp)), _norm(end_dim, len(shp))
        mid: Any = 1
        for d in shp[s : e + 1]:
            mid = mid * d
        return self.reshape(tuple(shp[:s]) + (mid,) + tuple(shp[e + 1 :]))

    def permute(self, dims: Sequence[int]) -> RecurrentTensor:
        nd = self.ndim  # type: ignore[attr-defined]
        dd = tuple(_norm(d, nd) for d in dims)
        if dd == tuple(range(nd)):
            return lift(self)
        return record1(ops.PermuteOp, [self], dims=dd)

    def transpose(self, dim0: int = 1, dim1: int = 0) -> RecurrentTensor:
        nd = self.ndim  # type: ignore[attr-defined]
        perm = list(range(nd))
        a, b = _norm(dim0, nd), _norm(dim1, nd)
        perm[a], perm[b] = perm[b], perm[a]
        return self.permute(perm)

    @property
    def T(self) -> RecurrentTensor:  # noqa: N802 - API name
        return self.transpose(0, 1)

    def unsqueeze(self, dim: int = 0) -> RecurrentTensor:
        shp = list(self.shape)  # type: ignore[attr-defined]
        d = _norm(dim, len(shp) + 1)
        return self.reshape(tuple(shp[:d]) + (1,) + tuple(shp[d:]))

    def squeeze(self, dims: int | Sequence[int] | None = None) -> RecurrentTensor:
        shp = list(self.shape)  # type: ignore[attr-defined]
        if dims is None:
            drop = {i for i, d in enumerate(shp) if isinstance(d, int) and d == 1}
        else:
            ds = [dims] if isinstance(dims, int) else list(dims)
            drop = {_norm(d, len(shp)) for d in ds}
            for i in drop:
                if not (isinstance(shp[i], int) and shp[i] == 1):
                    raise ShapeError(f"cannot squeeze dim {i} of size {shp[i]}", site=user_site())
        if not drop:
            return lift(self)
        return self.reshape(tuple(d for i, d in enumerate(shp) if i not in drop))

    def expand(self, shape: ShapeLike) -> RecurrentTensor:
        want = list(Shape.from_(shape))
        have = list(self.shape)  # type: ignore[attr-defined]
        have = [1] * (len(want) - len(have)) + have
        dims = [h if isinstance(w, int) and w == -1 else w for w, h in zip(want, have)]
        x = self if len(have) == len(list(self.shape)) else self.reshape(tuple(have))  # type: ignore[attr-defined]
        if Shape.from_(tuple(have)) == Shape.from_(tuple(dims)):
            return lift(x)
        return record1(ops.ExpandOp, [x], shape=Shape.from_(tuple(dims)))

    def slice_dim(self, dim: int, start: Any, stop: Any, step: int | None = None) -> RecurrentTensor:
        """x[..., start:stop, ...] on spatial dim `dim`; bounds may be index expressions."""
        if step not in (None, 1):
            raise ShapeError("slice_dim needs step 1", site=user_site())
        d = _norm(dim, self.ndim)  # type: ignore[attr-defined]
        length = ie.lift_to_int_ie(stop) - start
        ln = length.try_eval() if hasattr(length, "try_eval") else None
        st = ie.lift_to_int_ie(start)
        stv = st.try_eval()
        return record1(ops.SliceOp, [self], dim=d, start=stv if isinstance(stv, int) else st,
                       length=ln if isinstance(ln, int) else length)

    def index(self, dim: int, index: Any) -> RecurrentTensor:
        """Select along spatial `dim`: a scalar index removes the dim, a 1-d index keeps it."""
        d = _norm(dim, self.ndim)  # type: ignore[attr-defined]
        if isinstance(index, int) and not isinstance(index, bool):
            return self.slice_dim(d, index, index + 1).squeeze(d)
        from tempo.api.ops.creation import from_expr

        idx = from_expr(index) if isinstance(index, ie.IntIndexValue) else lift(index)
        return record1(ops.IndexSelectOp, [self, idx], dim=d)

    spatial_index = index
    index_select = index
