"""Host (numpy) arrays to and from torch, bfloat16 included. numpy's bfloat16 is
ml_dtypes' extension dtype, which neither DLPack nor `torch.as_tensor`/`Tensor.numpy()`
knows: its bits cross as int16 and are reinterpreted on the other side (no copy on the
host). torch is imported only when a function is called (importing this loads no backend,
so the api may use it)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tempo.core.dtype import dtypes

BF16: np.dtype = dtypes.to_np(dtypes.bfloat16)  # ml_dtypes' bfloat16: DLPack and torch lack it


def host_to_torch(a: Any, device: Any = None) -> Any:
    """`torch.as_tensor(a, device=device)` that also takes numpy bfloat16: neither
    `torch.as_tensor` nor DLPack knows ml_dtypes' bfloat16, so its bits go over as int16
    and are reinterpreted (no copy on the host)."""
    import torch

    a = np.asarray(a)
    if a.dtype != BF16:
        return torch.as_tensor(a, device=device)
    if not (a.flags.c_contiguous and a.flags.writeable):  # torch warns on read-only memory
        a = a.copy()  # (not np.ascontiguousarray: it makes a 0-d array 1-d)
    bits = torch.from_numpy(a.view(np.int16))
    return bits.view(torch.bfloat16).to(device) if device is not None else \
        bits.view(torch.bfloat16)


def torch_to_host(x: Any) -> np.ndarray:
    """`x.detach().cpu().numpy()` that also gives bfloat16 (as ml_dtypes' numpy dtype)."""
    import torch

    x = x.detach().cpu()
    if x.dtype != torch.bfloat16:
        return x.numpy()
    return x.contiguous().view(torch.int16).numpy().view(BF16)


def to_host(x: Any, dtype: Any = None) -> np.ndarray:
    """A numpy array of a torch tensor, jax array or array-like (bfloat16 included)."""
    if hasattr(x, "detach"):
        x = torch_to_host(x)
    return np.asarray(x, dtype=dtype)
