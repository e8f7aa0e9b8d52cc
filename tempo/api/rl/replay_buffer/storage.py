"""Replay storages: where inserted tuples live between `insert` and `sample` (host memory).

`deque` is a FIFO of `max_size` tuples (the oldest leaves first), kept as one preallocated
numpy ring array per item so a sample of n indices is one fancy-index per item. Others
register through `ReplayBufferRegistry.register_replay_buffer(key, builder)`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from tempo.core.errors import TempoError, user_site


class ReplayStorage(Protocol):
    """What `ReplayBuffer` needs of a storage."""

    def insert(self, items: Sequence[np.ndarray]) -> None: ...

    def __len__(self) -> int: ...

    def get(self, indices: np.ndarray, item: int) -> np.ndarray: ...


class DequeStorage:
    """FIFO ring of `max_size` tuples."""

    def __init__(self, max_size: int, item_shapes: Sequence[tuple[int, ...]],
                 item_dtypes: Sequence[np.dtype], **kwargs: Any) -> None:
        if kwargs:
            raise TempoError(f"the deque replay buffer takes no options, got {sorted(kwargs)}",
                             site=user_site())
        self.max_size = int(max_size)
        self.arrays = [np.zeros((self.max_size, *s), d) for s, d in zip(item_shapes, item_dtypes)]
        self.size = 0
        self.next = 0

    def insert(self, items: Sequence[np.ndarray]) -> None:
        for arr, x in zip(self.arrays, items):
            arr[self.next] = x
        self.next = (self.next + 1) % self.max_size
        self.size = min(self.size + 1, self.max_size)

    def __len__(self) -> int:
        return self.size

    def get(self, indices: np.ndarray, item: int) -> np.ndarray:
        """Items at logical indices (0 = oldest kept)."""
        start = (self.next - self.size) % self.max_size
        return self.arrays[item][(start + indices) % self.max_size]


StorageBuilder = Callable[..., ReplayStorage]


class ReplayBufferRegistry:
    """Storage builders by key; `"deque"` is built in."""

    _builders: dict[str, StorageBuilder] = {"deque": DequeStorage}

    @classmethod
    def register_replay_buffer(cls, key: str, builder: StorageBuilder) -> None:
        """`builder(max_size, item_shapes, item_dtypes, **kwargs) -> storage` with
        `insert(items)`, `__len__()` and `get(indices, item)`."""
        cls._builders[key] = builder

    @classmethod
    def get(cls, key: str) -> StorageBuilder:
        if key not in cls._builders:
            raise TempoError(f"no replay buffer storage {key!r}; registered: "
                             f"{sorted(cls._builders)}", site=user_site())
        return cls._builders[key]
