"""`DataLoader`: minibatches of a torch `Dataset` as a source over a domain (API.md §0).

The batch a point reads is fixed by the point, not by execution order: its row-major index
`k` over the sampled domain selects batch `k % n_batches` of epoch `k // n_batches`, and
each epoch visits the dataset in a permutation drawn from the config seed and the epoch
number. So a program reads the same data on every backend and under every schedule."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from tempo.core.domain import Domain, DomainLike
from tempo.core.dtype import DataType, dtypes
from tempo.core.errors import ShapeError, UnsupportedError, user_site
from tempo.runtime.host_arrays import to_host

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


def _as_array(v: Any) -> np.ndarray:
    """One field of a dataset item (a torch tensor, array or Python number) as numpy."""
    return to_host(v)


class DataLoader:
    """Fixed-size minibatches of an indexable dataset whose items are one tensor or a tuple
    of tensors (e.g. `(image, label)`); an incomplete last batch of an epoch is dropped, so
    every batch has the static shape `(batch_size, *item_shape)`."""

    def __init__(self, get_item: Callable[[int], Any], length: int, batch_size: int = 1,
                 shuffle: bool = True) -> None:
        if batch_size < 1 or length < batch_size:
            raise ShapeError(f"a dataset of {length} items gives no batch of {batch_size}",
                             site=user_site())
        self.get_item = get_item
        self.length = length
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.batches_per_epoch = length // batch_size
        first = get_item(0)
        self.is_tuple = isinstance(first, tuple | list)
        fields = [_as_array(f) for f in (first if self.is_tuple else (first,))]
        self.item_shapes = [f.shape for f in fields]
        self.item_dtypes: list[DataType] = [dtypes.from_np(f.dtype) for f in fields]
        self._cache: tuple[tuple[int, int], list[np.ndarray]] | None = None

    @staticmethod
    def from_torch_dataset(dataset: Any, batch_size: int = 1,
                           shuffle: bool = True) -> DataLoader:
        """A loader over a map-style torch `Dataset` (`len(ds)` and `ds[i]`)."""
        if not hasattr(dataset, "__len__") or not hasattr(dataset, "__getitem__"):
            raise UnsupportedError("DataLoader needs a map-style dataset (len and indexing); "
                                   "iterable datasets are not supported", site=user_site())
        return DataLoader(dataset.__getitem__, len(dataset), batch_size, shuffle)

    def indices(self, k: int, seed: int) -> np.ndarray:
        """Dataset indices of the k-th batch (over all epochs)."""
        epoch, b = divmod(k, self.batches_per_epoch)
        order = (np.random.default_rng([seed, epoch]).permutation(self.length)
                 if self.shuffle else np.arange(self.length))
        return order[b * self.batch_size:(b + 1) * self.batch_size]

    def batch(self, k: int, seed: int) -> list[np.ndarray]:
        """The k-th batch, one stacked array per field (the last one is cached, as every
        field of a point asks for the same batch)."""
        if self._cache is not None and self._cache[0] == (k, seed):
            return self._cache[1]
        items = [self.get_item(int(i)) for i in self.indices(k, seed)]
        rows = [it if self.is_tuple else (it,) for it in items]
        out = [np.stack([_as_array(r[j]) for r in rows]) for j in range(len(self.item_shapes))]
        self._cache = ((k, seed), out)
        return out

    def sample(self, domain: DomainLike = None) -> RecurrentTensor | tuple[RecurrentTensor, ...]:
        """One minibatch per point of `domain` (e.g. `(i,)`, the training iteration): a tensor
        of shape `(batch_size, *item_shape)` per field, a tuple if items are tuples."""
        from tempo.api.ops.creation import from_expr
        from tempo.api.tensor_base import active_ctx

        dom = Domain.from_(domain, none_is_empty=True)
        seed = active_ctx().execution_config.seed
        k = from_expr(dom.linearized_count_expr)
        outs = []
        for j, (shape, dt) in enumerate(zip(self.item_shapes, self.item_dtypes)):
            def field(kk: Any, j: int = j) -> np.ndarray:
                return self.batch(int(kk), seed)[j]

            outs.append(k.map_udf(field, shape=(self.batch_size, *shape), dtype=dt))
        return tuple(outs) if self.is_tuple else outs[0]

    def __len__(self) -> int:
        return self.batches_per_epoch


__all__ = ["DataLoader"]
