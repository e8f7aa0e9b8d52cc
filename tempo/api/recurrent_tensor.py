"""`RecurrentTensor`, assembled from the op-family mixins, and every op as a module-level
function (`import tempo.api.recurrent_tensor as tpo; tpo.softmax(x)`)."""

from __future__ import annotations

from typing import Any

from tempo.api import indexing
from tempo.api.autodiff import AutodiffOps
from tempo.api.autodiff.tape import note_branch, tape_of
from tempo.api.ops import conv as _conv
from tempo.api.ops import creation
from tempo.api.ops import elementwise as _elementwise
from tempo.api.ops import indexing_ops as _indexing
from tempo.api.ops import init as _init
from tempo.api.ops import random as _random
from tempo.api.ops.activations import ActivationOps
from tempo.api.ops.conv import ConvOps
from tempo.api.ops.creation import CreationOps
from tempo.api.ops.elementwise import ElementwiseOps
from tempo.api.ops.indexing_ops import IndexingOps
from tempo.api.ops.init import InitOps
from tempo.api.ops.linalg import LinalgOps
from tempo.api.ops.movement import MovementOps
from tempo.api.ops.movement import broadcast_tensors as _broadcast_tensors
from tempo.api.ops.movement import upcast_tensors as _upcast_tensors
from tempo.api.ops.random import RandomOps
from tempo.api.ops.reduce import ReduceOps
from tempo.api.ops.udf import UDFOps
from tempo.api.tensor_base import MaybeRecurrentTensor, RTBase
from tempo.api.tensor_base import lift as _lift
from tempo.api.torch_names import no_such_method
from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.core.errors import DefinitionError, user_site


class RecurrentTensor(
    CreationOps, RandomOps, InitOps, ElementwiseOps, ActivationOps, MovementOps, IndexingOps,
    ReduceOps, LinalgOps, ConvOps, UDFOps, AutodiffOps, RTBase
):
    """A tensor with symbolic (temporal) dimensions, recorded into the active context."""

    __hash__ = RTBase.__hash__

    def __getitem__(self, key: Any) -> RecurrentTensor:
        return indexing.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        indexing.setitem(self, key, value)
        note_branch(self._ctx_mgr, self, value)

    def __getattr__(self, name: str) -> Any:
        # only reached when normal lookup fails: torch's method names get their fix
        raise no_such_method(self, name)

    lift = staticmethod(_lift)
    broadcast_tensors = staticmethod(_broadcast_tensors)
    upcast_tensors = staticmethod(_upcast_tensors)

    @staticmethod
    def lift_all_to_rt(*xs: Any) -> list[RecurrentTensor]:
        return [_lift(x) for x in xs]

    def clear_placeholder_branches(self) -> None:
        """Remove every branch assigned to this placeholder (API §3.5), so it can be defined
        afresh (e.g. a target network's polyak update replaces its definition)."""
        if not isinstance(self.op, ops.MergeOp):
            raise DefinitionError(f"{self!r} is not a placeholder: it has no branches to clear",
                                  site=user_site())
        merge_id = self.tensor_id.op_id
        self.sdg.set_in_edges(merge_id, [])
        tape = tape_of(self._ctx_mgr)
        tape.stopped = {(m, k) for m, k in tape.stopped if m != merge_id}

    def copy_with_no_symbolic_index(self) -> RecurrentTensor:
        """The tensor read at its own point (drops the symbolic index)."""
        return self._wrap(self.tensor_id, None, self.requires_grad)

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
        indexing.check_user_definition(self)  # `x.init = v` after `x[True] = ...`: never used
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

# Every op as a module function (`tpo.softmax(x)`), written out in functions_*.py. Imported
# last: they shadow builtins (sum, max, abs, ...) only from here on.
from tempo.api import functions_math as _math  # noqa: E402
from tempo.api import functions_shape as _shape  # noqa: E402
from tempo.api.functions_math import *  # noqa: E402, F403
from tempo.api.functions_shape import *  # noqa: E402, F403

cat = RecurrentTensor.cat
stack = RecurrentTensor.stack
where = _elementwise.where
sink_many_udf = RecurrentTensor.sink_many_udf
sink_many_with_ts_udf = RecurrentTensor.sink_many_with_ts_udf
barrier = RecurrentTensor.barrier
source_udf = creation.source_udf
source_with_ts_udf = creation.source_with_ts_udf
placeholder_like = creation.placeholder_like
const_like = creation.const_like
ones_like = creation.ones_like
zeros_like = creation.zeros_like
fill = creation.fill
full = creation.full
random = rand = creation.random
uniform = _random.uniform
random_int = _random.random_int
random_bool = _random.random_bool
normal = _random.normal
randn = _random.randn
scaled_uniform = _init.scaled_uniform
linear_init_uniform = _init.linear_init_uniform
glorot_uniform = _init.glorot_uniform
kaiming_uniform = _init.kaiming_uniform
kaiming_normal = _init.kaiming_normal
orthogonal_init = _init.orthogonal_init
init_from_statedict = _init.init_from_statedict
init_from_existing_tensor = _init.init_from_existing_tensor
external_init = _init.external_init
scatter = _indexing.scatter
conv_general = convolution = _conv.conv_general
conv1d, conv2d, conv3d = _conv.conv1d, _conv.conv2d, _conv.conv3d
broadcast_tensors = _broadcast_tensors
upcast_tensors = _upcast_tensors
lift_all_to_rt = RecurrentTensor.lift_all_to_rt

_FUNCTIONS = [
    "placeholder", "placeholder_like", "const", "const_like", "ones", "zeros", "ones_like",
    "zeros_like", "fill", "full", "arange", "from_symbol", "from_expr", "random", "rand",
    "uniform", "random_int", "random_bool", "normal", "randn", "scaled_uniform",
    "linear_init_uniform", "glorot_uniform", "kaiming_uniform", "kaiming_normal",
    "orthogonal_init", "init_from_statedict", "init_from_existing_tensor", "external_init",
    "source_udf", "source_with_ts_udf", "cat", "stack", "where", "scatter", "conv_general",
    "convolution", "conv1d", "conv2d", "conv3d", "broadcast_tensors", "upcast_tensors",
    "lift_all_to_rt", "sink_many_udf", "sink_many_with_ts_udf", "barrier",
]

__all__ = ["RecurrentTensor", "MaybeRecurrentTensor", "dtypes", "lift", *_math.__all__,
           *_shape.__all__, *_FUNCTIONS]
