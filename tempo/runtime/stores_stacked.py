"""The jax block store: a point store that also keeps whole blocks of points as one array.

jax arrays are immutable, so jax tensors live in point stores (a dict per tensor). A
compiled loop (runtime/loops*.py) makes all of a tensor's points along its counter at
once, as the scan's stacked output; cutting that array into points, only for a reader of
the range to stack them again, cost a dispatch per few rows, a host copy per point and a
compilation per shape. `StackedStore` keeps the block as the scan made it: a read of a
range a block covers is the block itself (or one slice of it), a point of a block is
indexed from it when read, and a free marks the point dead (the block goes with its last
point). Points written one at a time are plain dict entries, as in any point store.

Writes are single-assignment (a point is written once per run), so a point is either a
dict entry or in a block, never both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class Block:
    """Points `lo .. lo+n-1` along the store's dim (`arr`, stacked along axis 0); `alive`
    holds the point numbers not freed yet."""

    lo: int
    arr: Any
    alive: set[int]

    @property
    def hi(self) -> int:
        return self.lo + int(self.arr.shape[0])


class StackedStore(dict):
    """Points of one tensor (dict entries) and blocks of points along key position `dim`
    (`take(arr, j)`: row j of a block; `join(pieces)`: pieces concatenated along axis 0)."""

    def __init__(self, dim: int, take: Callable[[Any, int], Any],
                 join: Callable[[list[Any]], Any]) -> None:
        super().__init__()
        self.dim = dim
        self.take = take
        self.join = join
        self.blocks: dict[tuple, list[Block]] = {}

    def _split(self, key: tuple) -> tuple[tuple, int]:
        d = self.dim
        return key[:d] + key[d + 1:], key[d]

    def _find(self, pre: tuple, i: int) -> Block | None:
        for b in self.blocks.get(pre, ()):
            if i in b.alive:
                return b
        return None

    def put_block(self, pre: tuple, lo: int, arr: Any, alive: Sequence[int] | None) -> None:
        """Points lo.. of prefix `pre` as the rows of `arr`; `alive`: the row numbers
        that hold live points (None: all)."""
        rows = range(int(arr.shape[0])) if alive is None else alive
        hi = lo + int(arr.shape[0])
        for b in list(self.blocks.get(pre, ())):  # a new run's write replaces what an
            for i in sorted(b.alive):  # earlier run left (a free of each point)
                if lo <= i < hi:
                    self.pop(self.key(pre, i))
        if dict.__len__(self):
            for i in range(lo, hi):
                k = self.key(pre, i)
                if dict.__contains__(self, k):
                    self.pop(k)
        self.blocks.setdefault(pre, []).append(Block(lo, arr, {lo + j for j in rows}))

    def key(self, pre: tuple, i: int) -> tuple:
        """The key of point `i` along the dim, prefix `pre` the other positions."""
        return pre[:self.dim] + (i,) + pre[self.dim:]

    def __missing__(self, key: tuple) -> Any:
        pre, i = self._split(key)
        b = self._find(pre, i)
        if b is None:
            raise KeyError(key)
        return self.take(b.arr, i - b.lo)

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            return True
        if not isinstance(key, tuple) or len(key) <= self.dim:
            return False
        pre, i = self._split(key)
        return self._find(pre, i) is not None

    def pop(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return dict.pop(self, key)
        pre, i = self._split(key)
        b = self._find(pre, i)
        if b is not None:
            b.alive.discard(i)
            if not b.alive:  # its last point: the block goes
                self.blocks[pre].remove(b)
                if not self.blocks[pre]:
                    del self.blocks[pre]
        return default

    def read_range(self, parts: tuple, stack: Callable[[list[Any]], Any]) -> Any:
        """The points `parts` names (ints, and one (lo, hi) range at `dim`) stacked: the
        blocks covering the range as they are (or sliced), points stacked between them;
        None if `parts` is another kind of read (the caller gathers it point by point)."""
        d = self.dim
        if len(parts) <= d or not isinstance(parts[d], tuple) or any(
                isinstance(p, tuple) for k, p in enumerate(parts) if k != d):
            return None
        lo, hi = parts[d]
        pre = parts[:d] + parts[d + 1:]
        if pre not in self.blocks:
            return None
        pieces: list[Any] = []
        single: list[Any] = []
        i = lo
        while i < hi:
            b = self._find(pre, i)
            if b is None:  # a point written alone (KeyError if there is none)
                single.append(dict.__getitem__(self, parts[:d] + (i,) + parts[d + 1:]))
                i += 1
                continue
            e = min(hi, b.hi)
            if len(b.alive) != b.hi - b.lo:  # freed points inside: stop at the first
                e = next((j for j in range(i, e) if j not in b.alive), e)
            if single:
                pieces.append(stack(single))
                single = []
            whole = i == b.lo and e == b.hi
            pieces.append(b.arr if whole else b.arr[i - b.lo: e - b.lo])
            i = e
        if single:
            pieces.append(stack(single))
        return pieces[0] if len(pieces) == 1 else self.join(pieces)

    def values(self) -> Iterator[Any]:  # type: ignore[override]  # blocks count too
        yield from dict.values(self)
        for bs in self.blocks.values():
            for b in bs:
                yield b.arr

    def clear(self) -> None:
        dict.clear(self)
        self.blocks.clear()

    def __len__(self) -> int:
        return dict.__len__(self) + sum(len(b.alive) for bs in self.blocks.values() for b in bs)
