"""torch.Tensor methods that RecurrentTensor spells otherwise, with what to write instead:
`x.masked_fill(m, v)` is `RT.where(m, v, x)`. A PyTorch user types these first; Python's bare
AttributeError named neither the line's fix nor that the op exists under another name."""

from __future__ import annotations

from tempo.core.errors import NoSuchMethodError, user_site

_CAST = "x.cast(dtypes.{})"
TORCH_METHODS: dict[str, str] = {
    "masked_fill": "RT.where(mask, value, x) (note the order: the mask picks the value)",
    "masked_fill_": "RT.where(mask, value, x) (tensors are not updated in place)",
    "topk": "x.sort(dim, descending=True) and a spatial slice of the values / indices, "
            "e.g. vals[0:k]",
    "argsort": "x.sort(dim)[1]",
    "view": "x.reshape(shape)",
    "view_as": "x.reshape(y.shape)",
    "clone": "x.ident()",
    "t": "x.T or x.transpose(0, 1)",
    "bmm": "x @ y (matmul broadcasts batch dims)",
    "narrow": "x.slice_dim(dim, start, start + length)",
    "clamp_min": "x.clip(lb=value) or x.maximum(value)",
    "clamp_max": "x.clip(ub=value) or x.minimum(value)",
    "norm": "x.l_norm(n, dims)",
    "gt": "x > y", "lt": "x < y", "ge": "x >= y", "le": "x <= y", "eq": "x == y",
    "ne": "x != y",
    "type_as": "x.cast(y.dtype)",
    "float": _CAST.format("float32"), "double": _CAST.format("float64"),
    "half": _CAST.format("float16"), "bfloat16": _CAST.format("bfloat16"),
    "long": _CAST.format("int64"), "int": _CAST.format("int32"), "bool": _CAST.format("bool_"),
    "unbind": "x.split(dim, x.shape.int_at(dim)) and squeeze each part",
    "item": "a sink: x.sink_udf(lambda v: ...) receives the value when the program runs",
    "numpy": "a sink: x.sink_udf(lambda v: ...) receives the value when the program runs",
    "tolist": "a sink: x.sink_udf(lambda v: ...) receives the value when the program runs",
    "to": "the device and backend of the ExecutionConfig (dev=, backend=); dtypes by "
          "x.cast(dtype)",
    "cpu": "the device of the ExecutionConfig (dev='cpu')",
    "cuda": "the device of the ExecutionConfig (dev='gpu')",
    "zero_": "RT.zeros_like(x) (tensors are not updated in place)",
    "add_": "x + y (tensors are not updated in place)",
    "mul_": "x * y (tensors are not updated in place)",
}


def no_such_method(obj: object, name: str) -> AttributeError:
    """The error for `obj.name` when the normal lookup failed: a NoSuchMethodError saying
    what to write for a torch name, Python's AttributeError for any other."""
    hint = TORCH_METHODS.get(name)
    cls = type(obj).__name__
    if hint is None or name.startswith("__"):
        return AttributeError(f"'{cls}' object has no attribute '{name}'")
    return NoSuchMethodError(f"{cls} has no method {name} (torch.Tensor's): write {hint}",
                             site=user_site())
