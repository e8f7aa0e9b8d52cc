"""Sink functions that collect results into a dict, for `sink_udf` (API.md §0)."""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any


def make_sink(name: str, store: MutableMapping[str, Any]) -> Callable[[Any], None]:
    """A sink that keeps the latest value under `store[name]`."""

    def sink(x: Any) -> None:
        store[name] = x

    return sink


def make_step_by_step_sink(name: str, store: MutableMapping[str, Any]) -> Callable[[Any], None]:
    """A sink that appends every value to the list `store[name]`, in schedule order."""

    def sink(x: Any) -> None:
        store.setdefault(name, []).append(x)

    return sink
