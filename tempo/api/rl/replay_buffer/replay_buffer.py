"""`ReplayBuffer` (API.md §6.4): insert tuples at the points of a domain, sample them
uniformly with replacement at the points of another.

`insert` returns a token (one per inserted point); passing `token[...]` to `sample` makes
sampling depend on those insertions, so the schedule runs them first (e.g. `token[0:i+1]`:
sample at iteration i from everything inserted up to i). The sampled index is a tensor of
the program, so every item of one sample comes from the same stored tuple."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tempo.api.recurrent_tensor import RecurrentTensor
from tempo.api.rl.env.env_runner import to_numpy
from tempo.api.rl.replay_buffer.storage import ReplayBufferRegistry, ReplayStorage
from tempo.api.tempo_context_manager import get_active_ctx_manager
from tempo.api.tensor_base import record1
from tempo.core import ops
from tempo.core.domain import Domain, DomainLike
from tempo.core.dtype import DataType, dtypes
from tempo.core.errors import DTypeError, ShapeError, TempoError, user_site
from tempo.core.shape import Shape, ShapeLike


@dataclass
class ReplayBuffer:
    """A host-side buffer of `max_size` tuples of the declared shapes and dtypes."""

    max_size: int
    item_shapes: list[tuple[int, ...]]
    item_dtypes: list[DataType]
    storage: ReplayStorage
    seed: int = 0
    _rng: np.random.Generator | None = field(default=None, repr=False)

    @staticmethod
    def make(max_size: int, item_shapes: list[ShapeLike], item_dtypes: list[DataType],
             storage_type: str = "deque", **kwargs: Any) -> ReplayBuffer:
        if len(item_shapes) != len(item_dtypes) or not item_shapes:
            raise TempoError("ReplayBuffer.make needs one dtype per item shape (at least one)",
                             site=user_site())
        if int(max_size) < 1:
            raise TempoError(f"max_size must be >= 1, got {max_size}", site=user_site())
        shapes = [tuple(int(d) for d in Shape.from_(s).as_static()) for s in item_shapes]
        dts = [dtypes.from_(d) for d in item_dtypes]
        seed = int(kwargs.pop("seed", get_active_ctx_manager().execution_config.seed))
        storage = ReplayBufferRegistry.get(storage_type)(
            int(max_size), shapes, [np.dtype(dtypes.to_np(d)) for d in dts], **kwargs)
        return ReplayBuffer(int(max_size), shapes, dts, storage, seed)

    # ---------------------------------------------------------------- insert
    def insert(self, data: tuple[Any, ...] | list[Any], domain: DomainLike = None
               ) -> RecurrentTensor:
        """Store one tuple per point of the items' domain (∪ `domain`); returns the token."""
        items = [RecurrentTensor.lift(x) for x in data]
        if len(items) != len(self.item_shapes):
            raise TempoError(f"insert got {len(items)} items, the buffer holds "
                             f"{len(self.item_shapes)} per tuple", site=user_site())
        for k, (x, shp, d) in enumerate(zip(items, self.item_shapes, self.item_dtypes)):
            if tuple(x.shape) != shp:
                raise ShapeError(f"replay item {k} has shape {tuple(x.shape)}, the buffer "
                                 f"declared {shp}", site=user_site())
            if x.dtype != d:
                raise DTypeError(f"replay item {k} has dtype {x.dtype}, the buffer declared "
                                 f"{d}", site=user_site())
        dom = Domain.from_(domain, none_is_empty=True)
        box: list[dict[tuple, np.ndarray]] = [{} for _ in items]  # this insert's staging
        staged = [record1(ops.MapUDFOp, [x], domain=dom, fn=self._stager(box[k]),
                          shape=Shape.from_(()), dtype=dtypes.bool_, with_ts=True)
                  for k, x in enumerate(items)]
        all_staged = staged[0]
        for st in staged[1:]:
            all_staged = all_staged & st
        return record1(ops.MapUDFOp, [all_staged], domain=dom, fn=self._committer(box),
                       shape=Shape.from_(()), dtype=dtypes.bool_, with_ts=True)

    @staticmethod
    def _key(ts: dict) -> tuple:
        return tuple(sorted((str(k), int(v)) for k, v in ts.items()))

    def _stager(self, box: dict[tuple, np.ndarray]) -> Any:
        """Holds one item of a point until every item of that point is there."""
        def stage(x: Any, ts: dict) -> np.bool_:
            box[self._key(ts)] = np.array(to_numpy(x))
            return np.bool_(True)

        return stage

    def _committer(self, box: list[dict[tuple, np.ndarray]]) -> Any:
        def commit(_: Any, ts: dict) -> np.bool_:
            key = self._key(ts)
            self.storage.insert([s.pop(key) for s in box])
            return np.bool_(True)

        return commit

    # ---------------------------------------------------------------- sample
    def sample(self, domain: DomainLike, token: Any = None,
               num_samples: int | None = None) -> list[RecurrentTensor]:
        """One uniformly drawn stored tuple per point of `domain` (with replacement); with
        `num_samples=n` (ours) n of them per point, each item led by n."""
        dom = Domain.from_(domain, none_is_empty=True)
        n = None if num_samples is None else int(num_samples)
        idx_shape = Shape.from_(() if n is None else (n,))
        site = user_site()  # an empty buffer is found at run time: name this line then
        if token is None:
            idx = RecurrentTensor.source_with_ts_udf(lambda ts: self._draw(n, site), idx_shape,
                                                     dtypes.int64, domain=dom)
        else:
            idx = record1(ops.MapUDFOp, [RecurrentTensor.lift(token)], domain=dom,
                          fn=lambda _tok, ts: self._draw(n, site), shape=idx_shape,
                          dtype=dtypes.int64, with_ts=True)
        outs = []
        for k, (s, d) in enumerate(zip(self.item_shapes, self.item_dtypes)):
            outs.append(idx.map_udf(self._getter(k), shape=(*tuple(idx_shape), *s), dtype=d))
        return outs

    def _draw(self, n: int | None, site: str = "") -> np.ndarray:
        size = len(self.storage)
        if size == 0:
            raise TempoError("sampling from an empty replay buffer: pass token=... from insert "
                             "so sampling runs after the insertions it needs", site=site)
        if self._rng is None:
            self._rng = np.random.default_rng(self.seed)
        return self._rng.integers(0, size, size=() if n is None else (n,), dtype=np.int64)

    def _getter(self, k: int) -> Any:
        return lambda ix: self.storage.get(to_numpy(ix).astype(np.int64), k)

    def __len__(self) -> int:
        return len(self.storage)
