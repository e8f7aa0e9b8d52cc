"""Shape and movement ops: reshape, permute, expand, squeeze, cat/stack, slicing, indexing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.tensor_base import active_ctx, lift, record1
from tempo.core import index_expr as ie
from tempo.core import ops
from tempo.core.errors import ArgumentError, ShapeError, user_site
from tempo.core.shape import Shape, ShapeLike

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor
    from tempo.api.tensor_self import TensorSelf


def _norm(dim: int, ndim: int) -> int:
    try:
        return ops.norm_dim(dim, ndim)
    except ShapeError as exc:
        raise ShapeError(exc.args[0], site=user_site()) from None


def _tensors(xs: Any, more: tuple, what: str = "cat") -> list[RecurrentTensor]:
    items = list(xs) if isinstance(xs, list | tuple) else [xs]
    if not items and not more:
        raise ArgumentError(f"{what} of no tensors: pass at least one", site=user_site())
    return [lift(x) for x in items + list(more)]


def cat(xs: Any, *more: Any, dim: int = 0) -> RecurrentTensor:
    ts = _tensors(xs, more)
    if len(ts) == 1:
        return ts[0]
    return record1(ops.CatOp, ts, dim=_norm(dim, ts[0].ndim))


def stack(xs: Any, *more: Any, dim: int = 0) -> RecurrentTensor:
    ts = _tensors(xs, more, "stack")
    d = _norm(dim, ts[0].ndim + 1)
    return cat([t.unsqueeze(d) for t in ts], dim=d)


class MovementOps:
    """Shape methods mixed into RecurrentTensor."""

    cat = staticmethod(cat)
    stack = staticmethod(stack)

    def ident(self) -> RecurrentTensor:
        """Materialise this (possibly indexed) read as a tensor of its own."""
        return record1(ops.IdentOp, [self])

    def reshape(self: TensorSelf, shape: ShapeLike) -> RecurrentTensor:
        dims = list(shape) if isinstance(shape, tuple | list) else (
            [shape] if isinstance(shape, int) else list(Shape.from_(shape)))
        if sum(1 for d in dims if isinstance(d, int) and d == -1) > 1:
            raise ShapeError(f"reshape to {shape}: at most one -1", site=user_site())
        if -1 in [d for d in dims if isinstance(d, int)]:
            known = 1
            for d in dims:
                if not (isinstance(d, int) and d == -1):
                    known = known * d
            total = self.shape.prod()
            dims = [total // known if isinstance(d, int) and d == -1 else d for d in dims]
            dims = [ie.lift_to_int_ie(d).try_eval() if not isinstance(d, int) and
                    ie.lift_to_int_ie(d).try_eval() is not None else d for d in dims]
        return record1(ops.ReshapeOp, [self], shape=Shape.from_(tuple(dims)))

    def flatten(self: TensorSelf, start_dim: int = 0, end_dim: int = -1) -> RecurrentTensor:
        shp = list(self.shape)
        if not shp:
            return self.reshape((1,))
        s, e = _norm(start_dim, len(shp)), _norm(end_dim, len(shp))
        mid: Any = 1
        for d in shp[s : e + 1]:
            mid = mid * d
        return self.reshape(tuple(shp[:s]) + (mid,) + tuple(shp[e + 1 :]))

    def permute(self: TensorSelf, dims: Sequence[int]) -> RecurrentTensor:
        nd = self.ndim
        dd = tuple(_norm(d, nd) for d in dims)
        if dd == tuple(range(nd)):
            return lift(self)
        return record1(ops.PermuteOp, [self], dims=dd)

    def transpose(self: TensorSelf, dim0: int = 1, dim1: int = 0) -> RecurrentTensor:
        nd = self.ndim
        perm = list(range(nd))
        a, b = _norm(dim0, nd), _norm(dim1, nd)
        perm[a], perm[b] = perm[b], perm[a]
        return self.permute(perm)

    @property
    def T(self: TensorSelf) -> RecurrentTensor:  # noqa: N802 - API name
        return self.transpose(0, 1)

    def unsqueeze(self: TensorSelf, dim: int = 0) -> RecurrentTensor:
        shp = list(self.shape)
        d = _norm(dim, len(shp) + 1)
        return self.reshape(tuple(shp[:d]) + (1,) + tuple(shp[d:]))

    def squeeze(self: TensorSelf, dims: int | Sequence[int] | None = None) -> RecurrentTensor:
        shp = list(self.shape)
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

    def expand(self: TensorSelf, shape: ShapeLike) -> RecurrentTensor:
        """Broadcast to `shape`, prepending 1-dims as needed; -1 keeps a dim's size."""
        want = [shape] if isinstance(shape, int) else list(shape or ())  # -1 is no Shape dim
        have = list(self.shape)
        have = [1] * (len(want) - len(have)) + have
        dims = [h if isinstance(w, int) and w == -1 else w for w, h in zip(want, have)]
        x = self if len(have) == len(list(self.shape)) else self.reshape(tuple(have))
        if Shape.from_(tuple(have)) == Shape.from_(tuple(dims)):
            return lift(x)
        return record1(ops.ExpandOp, [x], shape=Shape.from_(tuple(dims)))

    def slice_dim(
        self: TensorSelf, dim: int, start: Any, stop: Any, step: int | None = None
    ) -> RecurrentTensor:
        """x[..., start:stop, ...] on spatial dim `dim`; bounds may be index expressions."""
        if step not in (None, 1):
            raise ShapeError("slice_dim needs step 1", site=user_site())
        d = _norm(dim, self.ndim)
        length = ie.lift_to_int_ie(stop) - start
        ln = length.try_eval() if hasattr(length, "try_eval") else None
        st = ie.lift_to_int_ie(start)
        stv = st.try_eval()
        n = self.shape[d]
        if (isinstance(n, int) and isinstance(stv, int) and isinstance(ln, int)
                and (stv < 0 or ln < 0 or stv + ln > n)):
            raise ShapeError(f"slice {stv}:{stv + ln} of dim {d} of size {n}: the slice must "
                             "lie within the dim", site=user_site())
        return record1(ops.SliceOp, [self], dim=d, start=stv if isinstance(stv, int) else st,
                       length=ln if isinstance(ln, int) else length)

    def index(self: TensorSelf, dim: int, index: Any) -> RecurrentTensor:
        """Select along spatial `dim`: a scalar index removes the dim, a 1-d index keeps it."""
        d = _norm(dim, self.ndim)
        if isinstance(index, int) and not isinstance(index, bool):
            n = self.shape[d]
            i = index + n if index < 0 else index
            if isinstance(n, int) and not 0 <= i < n:
                raise ShapeError(f"index {index} is out of range for dim {d} of size {n}",
                                 site=user_site())
            return self.slice_dim(d, i, i + 1).squeeze(d)
        from tempo.api.ops.creation import from_expr

        idx = from_expr(index) if isinstance(index, ie.IntIndexValue) else lift(index)
        if not active_ctx().execution_config.enable_index_ops:
            from tempo.api.ops.indexing_ops import index_select_by_gather

            return index_select_by_gather(self, d, idx)
        return record1(ops.IndexSelectOp, [self, idx], dim=d)

    spatial_index = index
    index_select = index

    def unflatten(self: TensorSelf, dim: int, sizes: Sequence[int]) -> RecurrentTensor:
        shp = list(self.shape)
        d = _norm(dim, len(shp))
        return self.reshape(tuple(shp[:d]) + tuple(sizes) + tuple(shp[d + 1 :]))

    def repeat(self: TensorSelf, num_repeats: int | Sequence[int]) -> RecurrentTensor:
        """Tile like torch.Tensor.repeat, but a short repeat list is padded with 1s on the
        right (API §3.8); a long one pads the tensor's shape with 1s on the left."""
        reps = [num_repeats] if isinstance(num_repeats, int) else list(num_repeats)
        shp = list(self.shape)
        reps = reps + [1] * (len(shp) - len(reps))
        shp = [1] * (len(reps) - len(shp)) + shp
        inter = [v for d in shp for v in (1, d)]
        big = [v for r, d in zip(reps, shp) for v in (r, d)]
        out = self.reshape(tuple(inter)).expand(tuple(big))
        return out.reshape(tuple(r * d for r, d in zip(reps, shp)))

    def repeat_interleave(self: TensorSelf, num_repeats: int, dim: int = 0) -> RecurrentTensor:
        shp = list(self.shape)
        d = _norm(dim, len(shp))
        big = shp[: d + 1] + [num_repeats] + shp[d + 1 :]
        out = self.unsqueeze(d + 1).expand(tuple(big))
        return out.reshape(tuple(shp[:d]) + (shp[d] * num_repeats,) + tuple(shp[d + 1 :]))

    def flip(self: TensorSelf, dim: int | Sequence[int]) -> RecurrentTensor:
        ds = [dim] if isinstance(dim, int) else list(dim)
        nd = self.ndim
        if nd == 0 and ds:  # torch's "only dim" of a 0-d tensor: the kernels have none
            raise ShapeError(f"flip: dim {ds[0]} is out of range for a tensor of 0 dims (a "
                             "scalar at each point); slice a symbolic dim first, e.g. "
                             "x[0:T].flip(0)", site=user_site())
        dims = tuple(sorted({_norm(d, nd) for d in ds}))
        return record1(ops.FlipOp, [self], dims=dims) if dims else lift(self)

    def split(self: TensorSelf, dim: int, num_splits: int) -> list[RecurrentTensor]:
        """`num_splits` equal parts along `dim`."""
        d = _norm(dim, self.ndim)
        n = self.shape[d]
        if not isinstance(n, int) or n % num_splits:
            raise ShapeError(f"cannot split dim {d} of size {n} into {num_splits} equal parts",
                             site=user_site())
        k = n // num_splits
        return [self.slice_dim(d, i * k, (i + 1) * k) for i in range(num_splits)]

    def chunk(self: TensorSelf, chunks: int, dim: int = 0) -> list[RecurrentTensor]:
        return self.split(dim, chunks)

    def pad_dim(self: TensorSelf, padding: tuple[int, int] | int, dim: int,
                mode: str = "constant", value: Any = None) -> RecurrentTensor:
        nd = self.ndim
        d = _norm(dim, nd)
        pads: list[Any] = [(0, 0)] * (d + 1)
        pads[d] = padding
        return self.pad(tuple(pads), mode, value)

    def pad(self: TensorSelf, padding: Sequence[Any], mode: str = "constant",
            value: Any = None) -> RecurrentTensor:
        """Pad leading dims by (before, after) (an int pads both sides); modes constant,
        reflect, replicate and any (= constant)."""
        if mode not in ("constant", "reflect", "replicate", "any"):
            raise ShapeError(f"unknown pad mode {mode!r}", site=user_site())
        pads = tuple((p, p) if isinstance(p, int) else (int(p[0]), int(p[1])) for p in padding)
        shp = list(self.shape)
        if len(pads) > len(shp):
            raise ShapeError(f"padding {padding} has more dims than shape {tuple(shp)}",
                             site=user_site())
        if mode == "reflect":
            for (b, a), n in zip(pads, shp):
                if max(b, a) > 0 and isinstance(n, int) and n < 2:
                    raise ShapeError(f"reflect padding of a dim of size {n}", site=user_site())
        if not any(b or a for b, a in pads):
            return lift(self)
        m = "constant" if mode == "any" else mode
        v = 0 if value is None else value
        return record1(ops.PadOp, [self], padding=pads, mode=m, value=v)

    def dilate(self: TensorSelf, dilations: int | Sequence[int],
               n_dims: int | None = None) -> RecurrentTensor:
        """Insert `dilation - 1` zeros between the elements of each of the last `n_dims` dims."""
        nd = self.ndim
        if n_dims is None:
            n_dims = nd if not isinstance(dilations, Sequence) else len(dilations)
        dl = [dilations] * n_dims if isinstance(dilations, int) else list(dilations)
        x: Any = self
        for i, k in enumerate(dl):
            d = nd - n_dims + i
            if k == 1:
                continue
            n = x.shape[d]
            x = x.unsqueeze(d + 1)
            x = x.pad_dim((0, k - 1), d + 1)
            x = x.flatten(d, d + 1).slice_dim(d, 0, (n - 1) * k + 1)
        return lift(x)

    def slice_many(self, slices: Sequence[Any]) -> RecurrentTensor:
        """Slice dims 0..k by python slices, `ie.slice_` slices or (start, stop) pairs."""
        x: Any = self
        for d, s in enumerate(slices):
            if isinstance(s, slice):
                start = 0 if s.start is None else s.start
                stop = x.shape[d] if s.stop is None else s.stop
                x = x.slice_dim(d, start, stop, s.step)
            elif isinstance(s, ie.Slice):
                x = x.slice_dim(d, s.start, s.stop)
            elif isinstance(s, (tuple, list)) and len(s) == 2:
                x = x.slice_dim(d, s[0], s[1])
            else:
                raise ArgumentError(
                    f"slice_many: slice {d} is {s!r}; give a slice, ie.slice_(start, stop) "
                    "or a (start, stop) pair", site=user_site())
        return lift(x)

    def index_many(self, indexes: Sequence[Any]) -> RecurrentTensor:
        """Index dim k by `indexes[k]` (None skips); done last-to-first so dims stay put."""
        x: Any = self
        for d in reversed(range(len(indexes))):
            if indexes[d] is not None:
                x = x.index(d, indexes[d])
        return lift(x)

    spatial_index_many = index_many

    def is_like(self: TensorSelf, y: Any) -> bool:
        y = lift(y)
        return bool(self.shape == y.shape and self.dtype == y.dtype
                    and self.domain == y.domain)

    broadcast_tensors = staticmethod(lambda *xs: broadcast_tensors(*xs))
    upcast_tensors = staticmethod(lambda *xs: upcast_tensors(*xs))


def broadcast_tensors(*xs: Any) -> list[RecurrentTensor]:
    ts = [lift(x) for x in xs]
    shape = Shape.broadcast(*(t.shape for t in ts))
    return [t.expand(shape) for t in ts]


def upcast_tensors(*xs: Any) -> list[RecurrentTensor]:
    from tempo.api.ops.elementwise import cast
    from tempo.core.dtype import dtypes

    ts = [lift(x) for x in xs]
    dt = dtypes.upcast(*(t.dtype for t in ts))
    return [cast(t, dt) for t in ts]
