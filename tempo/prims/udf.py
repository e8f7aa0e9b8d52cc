"""User functions: udf_source (data, env reset/step), map_udf (tensor → tensor of a
declared shape and dtype) and sink_udf (consumes tensors).

A UDF's result (a torch tensor, numpy array or Python value) becomes a tensor of the
declared dtype on the backend's device, in memory Tempo owns: a result whose memory the
user can still reach after the call (`_held`: a view of their array, `lambda ts:
data[ts[t]]`, or a buffer they keep and rewrite) is copied when the conversion did not copy
it. Stored as is, the point aliased the user's memory: a later write to it changed points
Tempo still reads, and the memory accountant charged a numpy view as the whole of `data`
(a `(T, N)` array once per live point). A fresh result is stored without a copy. No
gradient flows through a user function.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from tempo.api.autodiff.grad_rules import NOT_DIFFERENTIABLE
from tempo.compiler.op_rules import NO_BATCHING, copies
from tempo.compiler.passes.vectorize_rules import Batching
from tempo.core import ops
from tempo.prims.define import primitive

if TYPE_CHECKING:
    from tempo.runtime.kernel_registry import Kernel


def sink_kernel(op: ops.SinkUDFOp, be: Any) -> Kernel:
    """The user's function itself (jax, numpy): it receives backend tensors."""
    return op.fn


def _torch_sink(op: ops.SinkUDFOp, be: Any) -> Kernel:
    """The user's function, with torch's autograd as outside the run (the generated code
    runs below it: `backends.torch_autograd`)."""
    from tempo.runtime.backends.torch_autograd import with_autograd

    return with_autograd(op.fn)


def _torch_udf(op: ops.UDFSourceOp | ops.MapUDFOp, be: Any) -> Kernel:
    import torch

    from tempo.runtime.backends.torch_autograd import with_autograd
    from tempo.runtime.host_arrays import BF16, host_to_torch

    dt, dev, fn = be.dtype(op.dtype), be.device, with_autograd(op.fn)

    def source(*args: Any) -> torch.Tensor:
        r = fn(*args)
        held = _held(r)  # (before as_tensor, whose tensor references a numpy r)
        bf16 = isinstance(r, np.ndarray) and r.dtype == BF16  # torch.as_tensor has no bf16
        out = (host_to_torch(r, dev) if bf16 else torch.as_tensor(r, device=dev)).to(dt)
        return out.clone() if held and out.data_ptr() == _data_ptr(r) else out

    return source


def _data_ptr(r: Any) -> int:
    if hasattr(r, "data_ptr"):
        return int(r.data_ptr())
    ai = getattr(r, "__array_interface__", None)
    return -1 if ai is None else int(ai["data"][0])


def _probe(r: Any) -> tuple[int, int]:
    """References to `r` and to its numpy base, counted as `_held` counts them (same
    frame depth): the calibration of `_FRESH`."""
    base = r.base if isinstance(r, np.ndarray) else None
    return sys.getrefcount(r), 0 if base is None else sys.getrefcount(base)


def _calibrated() -> tuple[int, int]:
    r, v = np.empty(2), np.empty(2)[0:1]  # each held by this local only
    return _probe(r)[0], _probe(v)[1]


_FRESH = _calibrated()
"""(references to a fresh numpy result, to a fresh view's base) inside `_held`, when the
caller keeps the result in one local, as the kernels do (`r = fn(*args)`)."""
_FRESH_TORCH = [0]  # the same for a torch tensor (`_calibrate_torch`, at the first one)


def _calibrate_torch() -> None:
    """A 2-element host scratch tensor, made once per process outside any torch function
    mode: it only counts references and never meets the program's device, so a device
    audit of the program (a mode watching factories) must not see it."""
    import torch

    with torch._C.DisableTorchFunction():
        r = torch.empty(2)
    _FRESH_TORCH[0] = _probe(r)[0]


def _held(r: Any) -> bool:
    """Whether the memory of the UDF result `r` stays reachable by the user after the
    call, so that storing it as is would alias it: `r` is referenced beyond the caller's
    one local (a buffer the user rewrites: `buf[:] = s; return buf`), or it is a numpy view
    of an array referenced beyond the view (`data[ts[t]]`) or of memory no numpy array
    owns, or a torch view. A fresh result (`np.stack(...)`, a reshape of a fresh array) is
    not. numpy arrays and torch tensors only: jax arrays and Python values are never
    written in place."""
    if isinstance(r, np.ndarray):
        base = r.base
        if base is None:
            return sys.getrefcount(r) > _FRESH[0]
        return not isinstance(base, np.ndarray) or sys.getrefcount(base) > _FRESH[1]
    if hasattr(r, "_base"):
        if not _FRESH_TORCH[0]:
            _calibrate_torch()  # (torch is loaded: this is a tensor)
        return r._base is not None or sys.getrefcount(r) > _FRESH_TORCH[0]
    return False


def _as_jax(r: Any, dt: Any, dev: Any) -> Any:
    """A UDF's result on the backend's device in one explicit transfer (a jnp.asarray
    first would copy host data to the default device, then on to `dev`); a result the
    user still holds is copied first (jax on the CPU may keep its memory)."""
    import jax
    import jax.numpy as jnp

    held = _held(r)
    if hasattr(r, "detach"):  # a torch tensor from a UDF (on its device: DLPack, no copy)
        r = jnp.from_dlpack((r.detach().clone() if held else r.detach()).contiguous())
    if isinstance(r, jax.Array):
        return jax.device_put(r if r.dtype == dt else r.astype(dt), dev)
    a = np.asarray(r, dtype=dt)
    return jax.device_put(np.array(a) if held and _data_ptr(a) == _data_ptr(r) else a, dev)


def _jax_udf(op: ops.UDFSourceOp | ops.MapUDFOp, be: Any) -> Kernel:
    dt, dev, fn = be.dtype(op.dtype), be.device, op.fn
    return lambda *args: _as_jax(fn(*args), dt, dev)


def _np_udf(op: ops.UDFSourceOp | ops.MapUDFOp, be: Any) -> Kernel:
    from tempo.runtime.backends.numpy import user_array

    dt, fn = be.dtype(op.dtype), op.fn

    def source(*args: Any) -> Any:
        r = fn(*args)
        held = _held(r)
        a = user_array(r, dt)
        return np.array(a) if held and _data_ptr(a) == _data_ptr(r) else a

    return source


def _vectorised_fn(op: ops.UDFSourceOp | ops.MapUDFOp, D: int, d: str) -> Any:
    """The user's vectorised function of `op` over dimension `d` of size `D`, or None (no
    `lazy_vectorized_version`, a UDF without symbol values, or it declines this dim)."""
    if op.lazy_vectorized_version is None or not op.with_ts:
        return None
    dim = next(v for v in op.domain.variables if v.name == d)
    return op.lazy_vectorized_version(dim, D)


def _batch_udf_source(op: ops.UDFSourceOp, batched: list[bool], shapes: list[Any], D: int,
                      d: str) -> Batching | None:
    """Only with the user's vectorised version (`lazy_vectorized_version`), asked for the
    dimension and its size; without one (or when it returns None for this dimension)
    the source keeps its loop. A source is batched over one dimension at most. (Sink
    UDFs have no batching rule: they keep their loops.)"""
    fn = _vectorised_fn(op, D, d)
    if fn is None:
        return None
    return Batching(replace(op, fn=fn, shape=op.shape.prepend_dim(D),
                            lazy_vectorized_version=None), (), exact_points=True)

def _batch_map_udf(op: ops.MapUDFOp, batched: list[bool], shapes: list[Any], D: int,
                   d: str) -> Batching | None:
    """As a source's rule, for a map with a vectorised version (an env step over a batch
    dim): the input is taken (or broadcast to) `(D, ...)`, the result is `(D, ...)`."""
    fn = _vectorised_fn(op, D, d)
    if fn is None:
        return None
    return Batching(replace(op, fn=fn, shape=op.shape.prepend_dim(D),
                            lazy_vectorized_version=None), (None,) * len(batched), expand=True,
                    exact_points=True)


primitive(ops.UDFSourceOp, grad=NOT_DIFFERENTIABLE, batching=_batch_udf_source, cost=copies,
          torch=_torch_udf, jax=_jax_udf, numpy=_np_udf)
primitive(ops.MapUDFOp, grad=NOT_DIFFERENTIABLE, batching=_batch_map_udf, cost=copies,
          torch=_torch_udf, jax=_jax_udf, numpy=_np_udf)
primitive(ops.SinkUDFOp, grad=NOT_DIFFERENTIABLE, batching=NO_BATCHING, cost=copies,
          torch=_torch_sink, jax=sink_kernel, numpy=sink_kernel)
