"""Chunk sizes for the backward passes, which must not raise peak memory above the stock layers'."""

from __future__ import annotations

from collections.abc import Iterator

#: Elements processed per step of an element-wise backward (GELU inversion works in fp64,
#: with roughly ten temporaries of this size).
ELEMENT_CHUNK: int = 1 << 16


def ranges(total: int, step: int) -> Iterator[tuple[int, int]]:
    """``[start, stop)`` pairs covering ``range(total)`` in steps of ``step`` (at least 1)."""
    step = max(1, step)
    for start in range(0, total, step):
        yield start, min(total, start + step)


def rows_per_chunk(row_elements: int, budget: int | None = None) -> int:
    """How many rows of ``row_elements`` fit in one chunk of ``budget`` elements (at least 1)."""
    budget = ELEMENT_CHUNK if budget is None else budget
    return max(1, budget // max(1, row_elements))
