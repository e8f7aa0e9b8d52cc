"""User functions: udf_source (data, env reset/step), map_udf (tensor → tensor of a
declared shape and dtype) and sink_udf (consumes tensors).

A UDF's result (a torch tensor, numpy array or Python value) becomes a tensor of the
declared dtype on the backend's device, in memory Tempo owns: a result that is a view of
the user's array (`lambda ts: data[ts[t]]`) is copied when the conversion did not copy it,
else the stored point aliases `data` (a later write to `data` changes it, and the memory
accountant charges a numpy view as the whole of `data`: a `(T, N)` array once per live
point). No gradient flows through a user function.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tempo.api.autodiff.grad_rules import NOT_DIFFERENTIABLE
from tempo.compiler.op_rules import NO_BATCHING, copies
from tempo.compiler.passes.vectorize_rules import Batching
from tempo.core import ops
from tempo.prims.define import primitive

if TYPE_CHECKING:
    from tempo.runtime.kernel_registry import Kernel


def sink_kernel(op: ops.SinkUDFOp, be: Any) -> Kernel:
    """The user's function itself (every backend): it receives backend tensors."""
    return op.fn


def _torch_udf(op: ops.UDFSourceOp | ops.MapUDFOp, be: Any) -> Kernel:
    import torch

    dt, dev, fn = be.dtype(op.dtype), be.device, op.fn

    def source(*args: Any) -> torch.Tensor:
        r = fn(*args)
        out = torch.as_tensor(r, device=dev).to(dt)
        return out.clone() if _is_view(r) and out.data_ptr() == _data_ptr(r) else out

    return source


def _is_view(r: Any) -> bool:
    """Whether `r` is a numpy or torch view of another array (memory the user holds)."""
    return getattr(r, "base", None) is not None or getattr(r, "_base", None) is not None


def _data_ptr(r: Any) -> int:
    return r.data_ptr() if hasattr(r, "data_ptr") else r.__array_interface__["data"][0]


def _as_jax(r: Any, dt: Any, dev: Any) -> Any:
    """A UDF's result on the backend's device in one explicit transfer (a jnp.asarray
    first would copy host data to the default device, then on to `dev`)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    if hasattr(r, "detach"):  # a torch tensor from a UDF (on its device: DLPack, no copy)
        r = jnp.from_dlpack(r.detach().contiguous())
    if isinstance(r, jax.Array):
        return jax.device_put(r if r.dtype == dt else r.astype(dt), dev)
    r = np.asarray(r, dtype=dt)  # (jax on the CPU may keep a numpy view's memory)
    return jax.device_put(np.array(r) if r.base is not None else r, dev)


def _jax_udf(op: ops.UDFSourceOp | ops.MapUDFOp, be: Any) -> Kernel:
    dt, dev, fn = be.dtype(op.dtype), be.device, op.fn
    return lambda *args: _as_jax(fn(*args), dt, dev)


def _np_udf(op: ops.UDFSourceOp | ops.MapUDFOp, be: Any) -> Kernel:
    import numpy as np

    from tempo.runtime.backends.numpy import user_array

    dt, fn = be.dtype(op.dtype), op.fn

    def source(*args: Any) -> Any:
        r = user_array(fn(*args), dt)
        return np.array(r) if r.base is not None else r

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
          torch=sink_kernel, jax=sink_kernel, numpy=sink_kernel)
