"""Shape, indexing, sampling and UDF ops as module functions (API.md §3.8).

Each is `lift(x).<op>(...)` with the method's parameters: written out, not generated at
import, so IDEs and mypy see them (`import tempo.api.recurrent_tensor as tpo`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.tensor_base import MaybeRecurrentTensor, lift
from tempo.core.domain import DomainLike
from tempo.core.dtype import DataTypeLike
from tempo.core.shape import ShapeLike

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def ident(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).ident()


def reshape(x: MaybeRecurrentTensor, shape: ShapeLike) -> RecurrentTensor:
    return lift(x).reshape(shape)


def flatten(x: MaybeRecurrentTensor, start_dim: int = 0, end_dim: int = -1) -> RecurrentTensor:
    return lift(x).flatten(start_dim, end_dim)


def unflatten(x: MaybeRecurrentTensor, dim: int, sizes: Sequence[int]) -> RecurrentTensor:
    return lift(x).unflatten(dim, sizes)


def permute(x: MaybeRecurrentTensor, dims: Sequence[int]) -> RecurrentTensor:
    return lift(x).permute(dims)


def transpose(x: MaybeRecurrentTensor, dim0: int = 1, dim1: int = 0) -> RecurrentTensor:
    return lift(x).transpose(dim0, dim1)


def unsqueeze(x: MaybeRecurrentTensor, dim: int = 0) -> RecurrentTensor:
    return lift(x).unsqueeze(dim)


def squeeze(x: MaybeRecurrentTensor, dims: int | Sequence[int] | None = None) -> RecurrentTensor:
    return lift(x).squeeze(dims)


def expand(x: MaybeRecurrentTensor, shape: ShapeLike) -> RecurrentTensor:
    return lift(x).expand(shape)


def repeat(x: MaybeRecurrentTensor, num_repeats: int | Sequence[int]) -> RecurrentTensor:
    return lift(x).repeat(num_repeats)


def repeat_interleave(x: MaybeRecurrentTensor, num_repeats: int, dim: int = 0) -> RecurrentTensor:
    return lift(x).repeat_interleave(num_repeats, dim)


def flip(x: MaybeRecurrentTensor, dim: int | Sequence[int]) -> RecurrentTensor:
    return lift(x).flip(dim)


def split(x: MaybeRecurrentTensor, dim: int, num_splits: int) -> list[RecurrentTensor]:
    return lift(x).split(dim, num_splits)


def chunk(x: MaybeRecurrentTensor, chunks: int, dim: int = 0) -> list[RecurrentTensor]:
    return lift(x).chunk(chunks, dim)


def pad(
    x: MaybeRecurrentTensor,
    padding: Sequence[Any],
    mode: str = 'constant',
    value: Any = None,
) -> RecurrentTensor:
    return lift(x).pad(padding, mode, value)


def pad_dim(
    x: MaybeRecurrentTensor,
    padding: tuple[int, int] | int,
    dim: int,
    mode: str = 'constant',
    value: Any = None,
) -> RecurrentTensor:
    return lift(x).pad_dim(padding, dim, mode, value)


def dilate(
    x: MaybeRecurrentTensor,
    dilations: int | Sequence[int],
    n_dims: int | None = None,
) -> RecurrentTensor:
    return lift(x).dilate(dilations, n_dims)


def is_like(x: MaybeRecurrentTensor, y: Any) -> bool:
    return lift(x).is_like(y)


def slice_dim(
    x: MaybeRecurrentTensor,
    dim: int,
    start: Any,
    stop: Any,
    step: int | None = None,
) -> RecurrentTensor:
    return lift(x).slice_dim(dim, start, stop, step)


def slice_many(x: MaybeRecurrentTensor, slices: Sequence[Any]) -> RecurrentTensor:
    return lift(x).slice_many(slices)


def index(x: MaybeRecurrentTensor, dim: int, index: Any) -> RecurrentTensor:
    return lift(x).index(dim, index)


spatial_index = index


index_select = index


def index_many(x: MaybeRecurrentTensor, indexes: Sequence[Any]) -> RecurrentTensor:
    return lift(x).index_many(indexes)


spatial_index_many = index_many


def index_add(
    x: MaybeRecurrentTensor,
    dim: int,
    index: Any,
    src: Any,
    alpha: float = 1.0,
) -> RecurrentTensor:
    return lift(x).index_add(dim, index, src, alpha)


spatial_index_add = index_add


def gather(src: MaybeRecurrentTensor, dim: int, index: Any) -> RecurrentTensor:
    return lift(src).gather(dim, index)


def scatter_add(sink: MaybeRecurrentTensor, dim: int, index: Any, src: Any) -> RecurrentTensor:
    return lift(sink).scatter_add(dim, index, src)


def one_hot(class_int: MaybeRecurrentTensor, num_classes: int) -> RecurrentTensor:
    return lift(class_int).one_hot(num_classes)


def multinomial(
    weights: MaybeRecurrentTensor,
    num_samples: int = 1,
    replacement: bool = False,
    domain: DomainLike = None,
) -> RecurrentTensor:
    return lift(weights).multinomial(num_samples, replacement, domain)


def sample_top_p(probs: MaybeRecurrentTensor, p: float = 0.9) -> RecurrentTensor:
    return lift(probs).sample_top_p(p)


def sample_likely(probs: MaybeRecurrentTensor, above: float = 0.05) -> RecurrentTensor:
    return lift(probs).sample_likely(above)


def sink_udf(x: MaybeRecurrentTensor, fun: Callable[[Any], None]) -> None:
    lift(x).sink_udf(fun)


def sink_with_ts_udf(x: MaybeRecurrentTensor, fun: Callable[[Any, dict], None]) -> None:
    lift(x).sink_with_ts_udf(fun)


def map_udf(
    x: MaybeRecurrentTensor,
    fun: Callable[[Any], Any],
    shape: ShapeLike | None = None,
    dtype: DataTypeLike | None = None,
) -> RecurrentTensor:
    return lift(x).map_udf(fun, shape, dtype)


def map_with_ts_udf(
    x: MaybeRecurrentTensor,
    fun: Callable[[Any, dict], Any],
    shape: ShapeLike | None = None,
    dtype: DataTypeLike | None = None,
) -> RecurrentTensor:
    return lift(x).map_with_ts_udf(fun, shape, dtype)


def detach(x: MaybeRecurrentTensor) -> RecurrentTensor:
    return lift(x).detach()


__all__ = [
    "ident", "reshape", "flatten", "unflatten", "permute", "transpose", "unsqueeze", "squeeze",
    "expand", "repeat", "repeat_interleave", "flip", "split", "chunk", "pad", "pad_dim", "dilate",
    "is_like", "slice_dim", "slice_many", "index", "spatial_index", "index_select", "index_many",
    "spatial_index_many", "index_add", "spatial_index_add", "gather", "scatter_add", "one_hot",
    "multinomial", "sample_top_p", "sample_likely", "sink_udf", "sink_with_ts_udf", "map_udf",
    "map_with_ts_udf", "detach"
]
