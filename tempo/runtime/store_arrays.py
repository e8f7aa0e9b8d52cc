"""The backend calls the stores make on arrays: finding a tensor's storage (what the
memory accountant counts), and selecting, writing and joining points of block buffers
(torch and numpy, whose arrays are writable in place)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Storage = Callable[[Any], tuple[int, int]]
"""A tensor's underlying storage: (a key unique while it lives, its bytes)."""


def storage_of(backend: str) -> Storage:
    """How to find a backend tensor's storage (torch: the tensor a view was taken of;
    numpy: the array owning the memory; jax arrays share nothing: each is its own)."""
    if backend == "torch":
        def torch_storage(x: Any) -> tuple[int, int]:
            # A view's _base is the tensor owning the memory (alive while the view is).
            base = x._base
            if base is None:
                return id(x), x.nbytes
            return id(base), base.nbytes

        return torch_storage
    if backend == "numpy":
        import numpy as np

        def numpy_storage(x: Any) -> tuple[int, int]:
            if not isinstance(x, np.ndarray):  # a numpy scalar: its own memory
                return id(x), int(x.nbytes)
            root = x
            while isinstance(root.base, np.ndarray):
                root = root.base
            if root.base is None:
                return root.__array_interface__["data"][0] or id(x), root.nbytes
            return id(root), root.nbytes  # memory owned by a foreign object (DLPack)

        return numpy_storage

    def own(x: Any) -> tuple[int, int]:
        return id(x), int(x.nbytes)

    return own


def slot_put(backend: str) -> Callable[[Any, int, Any], None]:
    """`put_at(front, j, value)`: point `j` of a store's front view (stored dim first)
    set to `value`, in one backend call and without a view object of the slot (for a
    backend whose arrays are writable in place: torch, numpy)."""
    if backend == "torch":
        import torch

        return torch.Tensor.__setitem__  # (unbound: no wrapper frame)
    import numpy as np

    return np.ndarray.__setitem__


def array_ops(backend: str) -> tuple[Callable, Callable, Callable]:
    """(select(buf, axis, j), put(dst, src), cat(views, axis)) for a backend whose arrays
    are writable in place (torch, numpy): the three calls the stores make."""
    if backend == "torch":
        import torch

        # the unbound methods themselves: a Python wrapper frame costs as much as a dict
        # write on each of the stores' hot calls
        return torch.Tensor.select, torch.Tensor.copy_, (lambda xs, a: torch.cat(xs, a))
    import numpy as np

    def put_n(dst: Any, src: Any) -> None:
        np.copyto(dst, src)

    def select_n(b: Any, a: int, j: int) -> Any:
        # the trailing ... keeps a 0-d *view* when b is 1-D (b[j] alone is a copied scalar,
        # which np.copyto cannot write into)
        return b[(slice(None),) * a + (j, Ellipsis)]

    return select_n, put_n, (lambda xs, a: np.concatenate(xs, a))
