"""The core of `RecurrentTensor`: a (tensor id, index expression) pair that records ops
into the active context's SDG. Op families are mixed in from `tempo.api.ops`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from tempo.core import index_expr as ie
from tempo.core import naming, ops
from tempo.core.domain import Domain
from tempo.core.dtype import DataType
from tempo.core.errors import DTypeError, IndexExprError, ShapeError, TempoError, user_site
from tempo.core.op_sources import AFTER_BARRIER
from tempo.core.sdg import SDG, Edge, TensorId
from tempo.core.shape import Shape

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor
    from tempo.api.tempo_context_manager import TempoContext

MaybeRecurrentTensor = Union["RecurrentTensor", ie.IndexValue, int, float, bool]


def active_ctx() -> TempoContext:
    from tempo.api.tempo_context_manager import get_active_ctx_manager

    return get_active_ctx_manager()


class RTBase:
    """A handle on output `tensor_id` of an op, read at `_index` (None = at its own point)."""

    _final_cls: type = object  # set to RecurrentTensor once the class is assembled

    def __init__(
        self,
        tensor_id: TensorId,
        index: ie.IndexSequence | None = None,
        requires_grad: bool | None = None,
        ctx: TempoContext | None = None,
    ) -> None:
        self._ctx_mgr = ctx if ctx is not None else active_ctx()
        self.tensor_id = tensor_id
        self._index = index
        self._index_site = ""  # the user's line that wrote `_index` (errors blame it)
        self.requires_grad = requires_grad
        self._grad: RecurrentTensor | None = None
        self._ctx: Any = None

    @property
    def grad(self) -> RecurrentTensor | None:
        """The accumulated gradient of this leaf (any wrapper of the same tensor sees it)."""
        if self._grad is None and self.requires_grad is True:
            from tempo.api.autodiff.tape import grad_of

            return grad_of(self)
        return self._grad

    @grad.setter
    def grad(self, value: RecurrentTensor | None) -> None:
        self._grad = value

    # ---------------------------------------------------------------- graph facts
    @property
    def sdg(self) -> SDG:
        return self._ctx_mgr.sdg

    @property
    def op(self) -> ops.Op:
        return self.sdg.ops[self.tensor_id.op_id]

    @property
    def unindexed_domain(self) -> Domain:
        return self.op.domain

    @property
    def read_expr(self) -> ie.IndexSequence:
        """The read expression over the unindexed domain (basis if not indexed)."""
        if self._index is not None:
            return self._index
        return ie.IndexSequence(tuple(self.unindexed_domain.variables))

    @property
    def is_indexed(self) -> bool:
        return self._index is not None

    @property
    def domain(self) -> Domain:
        if self._index is None:
            return Domain(self.unindexed_domain.variables)
        used = {v.name: v for v in self._index.vars_used()}
        return Domain(sorted(used.values(), key=lambda v: v.idx))

    @property
    def spatial_shape(self) -> Shape:
        return self.sdg.tensors[self.tensor_id].shape

    @property
    def shape(self) -> Shape:
        if self._index is None:
            return self.spatial_shape
        lens = [m.stop - m.start for m in self._index if isinstance(m, ie.Slice)]
        return Shape.from_(tuple(_simplify_dim(d) for d in lens) + tuple(self.spatial_shape))

    @property
    def dtype(self) -> DataType:
        return self.sdg.tensors[self.tensor_id].dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> Any:
        return self.shape.prod()

    def size(self, dim: int | Sequence[int] | None = None) -> Any:
        if dim is None:
            return tuple(self.shape)
        if isinstance(dim, int):
            return self.shape[ops.norm_dim(dim, self.ndim)]
        return tuple(self.shape[ops.norm_dim(d, self.ndim)] for d in dim)

    @property
    def creation_traceback(self) -> str:
        return self.op.site

    def __repr__(self) -> str:
        idx = f"[{self.read_expr}]" if self._index is not None else ""
        return (f"RecurrentTensor({self.tensor_id!r}{idx}, shape={self.shape}, "
                f"dtype={self.dtype}, domain={self.domain})")

    def __bool__(self) -> bool:
        raise TempoError("a RecurrentTensor has no truth value at record time; use where()",
                         site=user_site())

    def __hash__(self) -> int:
        return id(self)

    def _wrap(self, tid: TensorId, index: ie.IndexSequence | None = None,
              requires_grad: bool | None = None) -> RecurrentTensor:
        return RTBase._final_cls(tid, index, requires_grad, self._ctx_mgr)


def _simplify_dim(d: Any) -> Any:
    if isinstance(d, ie.ConstInt):
        return d.const
    v = d.try_eval() if hasattr(d, "try_eval") else None
    return v if isinstance(v, int) else d


# -------------------------------------------------------------------- recording
def lift(x: Any) -> RecurrentTensor:
    """RT → itself; Python/NumPy values → const; index expressions → evaluating tensor."""
    if isinstance(x, RTBase):
        # ignore: RTBase is only ever instantiated as its subclass RecurrentTensor
        return x  # type: ignore[return-value]
    from tempo.api.ops import creation

    if isinstance(x, ie.IntIndexValue):
        return creation.from_expr(x)
    if isinstance(x, bool | int | float | np.ndarray | np.generic | list | tuple):
        return creation.const(x)
    if type(x).__module__.startswith("torch"):
        from tempo.runtime.host_arrays import torch_to_host

        return creation.const(torch_to_host(x))
    raise DTypeError(f"cannot use a {type(x).__name__} ({x!r:.40}) as a tensor: operands must "
                     "be RecurrentTensors, index expressions, Python numbers or bools, lists "
                     "or arrays", site=user_site())


def combine_requires_grad(xs: Sequence[RTBase]) -> bool | None:
    flags = [x.requires_grad for x in xs]
    if any(f is True for f in flags):
        return True
    if any(f is None for f in flags):
        return None
    return False


def record(
    op_cls: type[ops.Op], inputs: Sequence[Any], domain: Domain | None = None, **params: Any
) -> list[RecurrentTensor]:
    """Add one op reading `inputs` (at their index expressions); return its outputs."""
    ctx = active_ctx()
    sdg = ctx.sdg
    xs = promote(op_cls, [same_context(lift(x), ctx) for x in inputs], params)
    if domain is not None:  # (the inputs' symbols were checked where they were indexed)
        for v in domain.variables:
            if ctx.owns_not(v):
                check_symbols(v, f"domain {naming.domain_word(domain)}")
    dom = union_domains([x.domain for x in xs] + ([domain] if domain is not None else []))
    site = user_site()
    tags = ctx.current_tags
    if ctx.last_barrier is not None and issubclass(op_cls, ops.UDFSourceOp | ops.MapUDFOp):
        tags |= {f"{AFTER_BARRIER}{ctx.last_barrier}"}  # its side of the barrier
    op = op_cls(op_id=sdg.new_id(), domain=dom, site=site, tags=tags, **params)
    params_dom = _params_domain(op)
    if params_dom is not None:
        op = op_cls(op_id=op.op_id, domain=union_domains([dom, params_dom]), site=site,
                    tags=tags, **params)
    try:
        shapes, dts = op.infer([x.shape for x in xs], [x.dtype for x in xs])
    except (ShapeError, DTypeError) as exc:
        described = ", ".join(operand_label(x, site) for x in xs)
        why = getattr(exc, "message", exc.args[0])
        raise type(exc)(f"{naming.kind(op)} of {described}: {why}", site=site) from None
    sdg.add_op(op, [], shapes, dts)
    for k, x in enumerate(xs):
        sdg.add_edge(Edge(op.op_id, k, x.tensor_id, x.read_expr, site=x._index_site or site))
    rg = combine_requires_grad(xs) if xs else params.get("requires_grad", False)
    outs = [RTBase._final_cls(ops_tid(op, k), None, rg, ctx) for k in range(op.num_outputs)]
    from tempo.api.autodiff.tape import note_record

    note_record(ctx, op.op_id, xs, outs)
    return outs


def promote(op_cls: type[ops.Op], xs: list[RecurrentTensor],
            params: dict[str, Any]) -> list[RecurrentTensor]:
    """Cast the inputs to the dtypes the op computes in (`Op.input_dtypes`): the one place
    dtype promotion happens, so every backend's kernels see the same dtypes."""
    want = op_cls.input_dtypes([x.dtype for x in xs], **params)
    return [x if x.dtype == dt else record1(ops.CastOp, [x], dtype=dt) for x, dt in zip(xs, want)]


def same_context(x: RecurrentTensor, ctx: TempoContext) -> RecurrentTensor:
    """A tensor recorded in one TempoContext cannot be read in another: its id means another
    op there, which would compute the wrong thing."""
    if x._ctx_mgr is not ctx:
        raise TempoError(f"{label(x)} belongs to another TempoContext than the one recording "
                         "this op: build every tensor of a program inside its own context",
                         site=user_site())
    return x


def label(x: RTBase) -> str:
    """The user's name for x's tensor: its `name=` or its defining line."""
    return naming.op_label(x.op, x.sdg.names)


def operand_label(x: RTBase, site: str) -> str:
    """An operand in an error about the op at `site`: its shape and dtype, and where it was
    defined when that is another line ('x (3,) float32 from `x = ...` at prog.py:5')."""
    head = f"{naming.shape_word(x.shape)} {naming.dtype_word(x.dtype)}"
    op = x.op
    name = x.sdg.names.get(op.op_id)
    if name:
        return f"'{name}' {head}"
    if naming.where(op.site) and naming.where(op.site) != naming.where(site):
        return f"{head} ({naming.op_label(op)})"
    return head


def set_name(x: RecurrentTensor, name: str | None) -> RecurrentTensor:
    """Record the user's `name=` for x's tensor; errors then call it by that name."""
    if name is not None:
        x.sdg.names[x.tensor_id.op_id] = str(name)
    return x


def _params_domain(op: ops.Op) -> Domain | None:
    """The variables the op's kernel receives (a symbolic shape `(T - t,)`, a slice start)
    that its inputs do not vary along, or None. The op varies along them too: an expand to
    `(T - t,)` of an index over (b,) alone would run once per b with one t's size (the
    gather-based index_select of a window's gradient, `enable_index_ops=False`)."""
    used = {v.name: v for e in op.runtime_exprs() if not isinstance(e, int)
            for v in e.vars_used()}
    missing = [v for n, v in used.items() if n not in {w.name for w in op.domain.variables}]
    return Domain(sorted(missing, key=lambda v: v.idx)) if missing else None


def union_domains(domains: Sequence[Domain]) -> Domain:
    """The union of variables, in universe order, with default bounds."""
    found = {v.name: v for d in domains for v in d.variables}
    return Domain(sorted(found.values(), key=lambda v: v.idx))


def ops_tid(op: ops.Op, k: int) -> TensorId:
    return TensorId(op.op_id, k)


def record1(op_cls: type[ops.Op], inputs: Sequence[Any], **params: Any) -> RecurrentTensor:
    return record(op_cls, inputs, **params)[0]


def check_symbols(expr: ie.IndexExpr, what: str) -> None:
    """Every symbol an index uses must belong to the active context."""
    ctx = active_ctx()
    for s in expr.symbols_used():
        if ctx.owns_not(s):
            raise IndexExprError(
                f"{what} uses the symbol {s} of another TempoContext than the one recording "
                "this op: take the symbols of a program from its own context's "
                "variables_and_bounds", site=user_site())
        if not ctx.knows(s):
            raise IndexExprError(
                f"{what} uses the symbol {s}, which is not a dimension of this TempoContext "
                f"(its dimensions are {naming.domain_word(ctx.universe)}; use the symbols from "
                "ctx.variables_and_bounds)",
                site=user_site(),
            )

