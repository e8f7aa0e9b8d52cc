"""N-d convolution for the NumPy backend with torch's semantics (stride, padding,
dilation, groups, transposed with output_padding), by sliding windows + tensordot.

A transposed conv is the forward conv of the stride-dilated input, padded by
d*(k-1)-p (plus output_padding on the high side), with the kernel flipped and its
in/out channels swapped per group: the same lowering XLA uses, so jax agrees.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from tempo.core import ops


def transposed_padding(op: ops.ConvOp, kernel: tuple[int, ...]) -> list[tuple[int, int]]:
    """(low, high) padding of the equivalent forward conv of a transposed conv."""
    out_pad = op.output_padding or (0,) * op.n_dims
    return [
        (d * (k - 1) - p, d * (k - 1) - p + o)
        for k, p, d, o in zip(kernel, op.padding, op.dilation, out_pad)
    ]


def transposed_weight(w: Any, groups: int, xp: Any) -> Any:
    """(C_in, C_out/g, *k) → (C_out, C_in/g, *k), spatially flipped (`xp`: numpy/jnp)."""
    cin, og = w.shape[0], w.shape[1]
    k = tuple(w.shape[2:])
    w = w.reshape(groups, cin // groups, og, *k)
    w = xp.swapaxes(w, 1, 2).reshape(groups * og, cin // groups, *k)
    return xp.flip(w, tuple(range(2, 2 + len(k))))


def _dilate(x: np.ndarray, factors: tuple[int, ...]) -> np.ndarray:
    if all(f == 1 for f in factors):
        return x
    sp = x.shape[2:]
    out = np.zeros(x.shape[:2] + tuple((n - 1) * f + 1 for n, f in zip(sp, factors)), x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(None, None, f) for f in factors)] = x
    return out


def _pad(x: np.ndarray, pads: list[tuple[int, int]]) -> np.ndarray:
    if any(lo > 0 or hi > 0 for lo, hi in pads):
        x = np.pad(x, [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in pads])
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        x = x[(slice(None), slice(None)) + tuple(
            slice(-min(lo, 0), n - (-min(hi, 0))) for (lo, hi), n in zip(pads, x.shape[2:])
        )]
    return x


def conv_forward(
    x: np.ndarray, w: np.ndarray, stride: tuple[int, ...], pads: list[tuple[int, int]],
    dilation: tuple[int, ...], lhs_dilation: tuple[int, ...], groups: int,
) -> np.ndarray:
    """out[n, o, p] = Σ_{c, k} xpad[n, g(o)·Cg + c, p·s + k·d] · w[o, c, k]."""
    nsp = x.ndim - 2
    x = _pad(_dilate(x, lhs_dilation), pads)
    k = w.shape[2:]
    win = tuple(d * (kk - 1) + 1 for kk, d in zip(k, dilation))
    v = sliding_window_view(x, win, axis=tuple(range(2, 2 + nsp)))
    v = v[(slice(None), slice(None))
          + tuple(slice(None, None, s) for s in stride)
          + tuple(slice(None, None, d) for d in dilation)]  # (N, C, *out, *k)
    cg, og = x.shape[1] // groups, w.shape[0] // groups
    red_v = [1] + list(range(2 + nsp, 2 + 2 * nsp))
    red_w = list(range(1, 2 + nsp))
    parts = [
        np.tensordot(v[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og], axes=(red_v, red_w))
        for g in range(groups)
    ]  # each (N, *out, O/g)
    out = parts[0] if groups == 1 else np.concatenate(parts, axis=-1)
    return np.ascontiguousarray(np.moveaxis(out, -1, 1))


def conv_kernel(op: ops.ConvOp) -> Callable[..., np.ndarray]:
    """The numpy kernel of a `ConvOp` (x and w arrive in one dtype: `ConvOp.input_dtypes`)."""
    stride, dil, groups, n = tuple(op.stride), tuple(op.dilation), op.groups, op.n_dims

    if op.transposed:
        def conv_t(x: np.ndarray, w: np.ndarray) -> np.ndarray:
            pads = transposed_padding(op, tuple(w.shape[2:]))
            wt = transposed_weight(w, groups, np)
            return conv_forward(x, wt, (1,) * n, pads, dil, stride, groups)

        return conv_t
    pads = [(p, p) for p in op.padding]

    def conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
        return conv_forward(x, w, stride, pads, dil, (1,) * n, groups)

    return conv
