"""`RecurrentTensor`, assembled from the op-family mixins, and every op as a module-level
function (`import tempo.api.recurrent_tensor as tpo; tpo.softmax(x)`)."""

from __future__ import annotations

from typing import Any

from tempo.api import indexing
from tempo.api.ops import creation
from tempo.api.ops.creation import CreationOps
from tempo.api.ops.elementwise import ElementwiseOps
from tempo.api.ops.linalg import LinalgOps
from tempo.api.ops.movement import MovementOps
from tempo.api.ops.reduce import ReduceOps
from tempo.api.ops.udf import UDFOps
from tempo.api.tensor_base import MaybeRecurrentTensor, RTBase
from tempo.api.tensor_base import lift as _lift
from tempo.core.dtype import dtypes


class RecurrentTensor(
    CreationOps, ElementwiseOps, MovementOps, ReduceOps, LinalgOps, UDFOps, RTBase
):
    """A tensor with symbolic (temporal) dimensions, recorded into the active context."""

    __hash__ = RTBase.__hash__

    def __getitem__(self, key: Any) -> RecurrentTensor:
        return indexing.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        indexing.setitem(self, key, value)

    lift = staticmethod(_lift)

    def detach(self) -> RecurrentTensor:
        """The same tensor, cut from autodiff."""
        return self._wrap(self.tensor_id, self._index, False)

    @property
    def previous(self) -> RecurrentTensor:
        return self[self.unindexed_domain.lex_prev_expr]

    @property
    def next_(self) -> RecurrentTensor:
        return self[self.unindexed_domain.lex_next_expr]

    @property
    def init(self) -> RecurrentTensor:
        return self[self.unindexed_domain.lb_expr]

    @init.setter
    def init(self, value: Any) -> None:
        self[self.unindexed_domain.lb_expr] = value


RTBase._final_cls = RecurrentTensor

lift = _lift
placeholder = creation.placeholder
const = creation.const
ones = creation.ones
zeros = creation.zeros
arange = creation.arange
from_symbol = creation.from_symbol
from_expr = creation.from_expr

_METHODS = [
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "floor_div", "floor_divide",
    "remainder", "mod", "pow_", "square", "squared", "neg", "negate", "exp", "ln", "log",
    "loge", "sqrt", "sin", "cos", "sigmoid", "tanh", "relu", "abs", "floor", "ceil", "erf",
    "maximum", "minimum", "cast", "logical_not", "less_than", "greater_than", "equals",
    "not_equals", "ident", "reshape", "flatten", "permute", "transpose", "unsqueeze",
    "squeeze", "expand", "slice_dim", "index", "spatial_index", "index_select", "sum", "mean",
    "max", "min", "argmax", "argmin", "cumsum", "softmax", "logsumexp", "matmul", "dot",
    "sink_udf", "sink_with_ts_udf", "map_udf", "map_with_ts_udf", "detach",
]


def _module_fn(name: str) -> Any:
    method = getattr(RecurrentTensor, name)

    def fn(x: MaybeRecurrentTensor, *args: Any, **kwargs: Any) -> Any:
        return method(_lift(x), *args, **kwargs)

    fn.__name__ = name
    fn.__doc__ = method.__doc__
    return fn


for _name in _METHODS:
    globals()[_name] = _module_fn(_name)

cat = RecurrentTensor.cat
stack = RecurrentTensor.stack
where = RecurrentTensor.where
sink_many_udf = RecurrentTensor.sink_many_udf
sink_many_with_ts_udf = RecurrentTensor.sink_many_with_ts_udf
barrier = RecurrentTensor.barrier
source_udf = creation.source_udf
source_with_ts_udf = creation.source_with_ts_udf
random = creation.random

__all__ = ["RecurrentTensor", "MaybeRecurrentTensor", "dtypes", "lift", *_METHODS]
