"""The symbolic dependence graph (SDG): ops by id, and exact edges between them.

An edge says "sink op at point p reads output k of source op at `expr(p)` where `cond(p)`
holds". `expr` has one member per source-domain variable: a point or a slice. The relation
is kept exact (never widened), because scheduling, freeing and autodiff depend on it.
"""

from __future__ import annotations

import copy
import functools
import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from tempo.core.domain import Domain
from tempo.core.dtype import DataType
from tempo.core.index_expr import BooleanIndexValue, IndexSequence, Slice, Symbol
from tempo.core.ops import MergeOp, Op
from tempo.core.sdg_compose import compose
from tempo.core.shape import Shape

_SAME = object()  # "leave this field as it is" for `SDG.set_input`


class RewriteError(Exception):
    """A compiler rewrite that cannot be done exactly (an internal error: passes check
    before rewriting, or catch it and leave the graph unchanged)."""


@dataclass(frozen=True)
class TensorId:
    """Output `output_id` of op `op_id`: the key of a tensor in stores and executors."""

    op_id: int
    output_id: int = 0

    def __repr__(self) -> str:
        return f"T{self.op_id}.{self.output_id}"


@dataclass(frozen=True, eq=False)
class Edge:
    """Sink op `sink` (input position `sink_in`) reads `src` at `expr` where `cond` holds."""

    sink: int
    sink_in: int
    src: TensorId
    expr: IndexSequence
    cond: BooleanIndexValue | None = None
    # The user's line that wrote this read (an index or a definition), for error messages.
    site: str = ""

    def is_point(self) -> bool:
        return all(m.is_point() for m in self.expr)

    @functools.cached_property
    def var_names(self) -> frozenset[str]:
        """Names of the loop variables the read uses (in its index and its condition)."""
        used = self.expr.vars_used() | (self.cond.vars_used() if self.cond is not None else set())
        return frozenset(v.name for v in used)

    def moved(self, src: TensorId, expr: IndexSequence, cond: BooleanIndexValue | None) -> Edge:
        """The same reader input reading `src` at `expr` under `cond` instead."""
        return Edge(self.sink, self.sink_in, src, expr, cond, self.site)


@dataclass(frozen=True)
class TensorInfo:
    shape: Shape
    dtype: DataType


@dataclass
class SDG:
    """Ops and edges of one program; cheap to copy for passes that rewrite it."""

    universe: Domain
    ops: dict[int, Op] = field(default_factory=dict)
    in_edges: dict[int, list[Edge]] = field(default_factory=dict)
    out_edges: dict[int, list[Edge]] = field(default_factory=dict)
    tensors: dict[TensorId, TensorInfo] = field(default_factory=dict)
    bound_defs: dict[Symbol, int] = field(default_factory=dict)
    keep: set[TensorId] = field(default_factory=set)
    # Dims that must stay loops: a boolean bound ends them at run time, or they enclose such
    # an end (the stop is decided per point of every dim of its tensor's domain).
    loop_dims: set[Symbol] = field(default_factory=set)
    # Bounds a boolean tensor ends at run time (API §7.10): bound_defs holds their maximum,
    # which passes may use for sizes but must not fold into values.
    ended_bounds: set[Symbol] = field(default_factory=set)
    # Storage choice (compiler pass): tensor -> domain position of its block dimension.
    block_stores: dict[TensorId, int] = field(default_factory=dict)
    # User names (`name=`) of ops' tensors, for error messages (`tempo.core.naming`).
    names: dict[int, str] = field(default_factory=dict)
    _next_id: int = 0

    # Bumped by every mutation helper: the pass manager's "did this pass change anything".
    version: int = 0
    # Ops whose definition or reads changed since the last `take_changed()` (validation).
    changed: set[int] = field(default_factory=set)
    # A topological order (op id -> rank), kept up to date by the helpers while it stays
    # valid and recomputed by `topological()` after a change that could break it.
    _order: dict[int, int] | None = field(default=None, repr=False)

    # ---------------------------------------------------------------- building
    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def new_dim(self, hint: str, bound: int) -> tuple[Symbol, Symbol]:
        """A new dimension (variable, bound) appended to the universe, innermost, with its
        bound fixed to `bound`: the blocks of a tiling or incrementalisation rewrite, or
        a dimension the front end adds. Named `hint` plus the first free number."""
        from tempo.core.utils import make_symbols

        taken = {v.name for v in self.universe.variables}
        name = next(f"{hint}{j}" for j in range(len(taken), 2 * len(taken) + 2)
                    if f"{hint}{j}" not in taken)
        start = max((v.idx // 2 + 1 for v in self.universe.variables), default=0)
        (var, ub), = make_symbols([name], start_idx=start)
        self.universe = self.universe.append_dim(var)
        self.bound_defs[ub] = int(bound)
        self.version += 1
        return var, ub

    def add_op(
        self,
        op: Op,
        inputs: Iterable[tuple[TensorId, IndexSequence]],
        shapes: list[Shape],
        dtypes_: list[DataType],
    ) -> Op:
        self.ops[op.op_id] = op
        self.in_edges[op.op_id] = []
        self.out_edges.setdefault(op.op_id, [])
        self._next_id = max(self._next_id, op.op_id + 1)
        if self._order is not None:  # a new op reads older ones: it goes last
            self._order[op.op_id] = next(reversed(self._order.values()), -1) + 1
        for k, (shape, dt) in enumerate(zip(shapes, dtypes_)):
            self.tensors[TensorId(op.op_id, k)] = TensorInfo(shape, dt)
        for src, expr in inputs:
            self.add_edge(Edge(op.op_id, len(self.in_edges[op.op_id]), src, expr))
        self.changed.add(op.op_id)
        self.version += 1
        return op

    def add_inferred(self, op: Op, inputs: Iterable[tuple[TensorId, IndexSequence]]) -> Op:
        """Add a new op whose output shapes and dtypes follow from its reads (op's rule)."""
        reads = list(inputs)
        probes = [Edge(op.op_id, k, src, expr) for k, (src, expr) in enumerate(reads)]
        shapes, dts = op.infer([self.read_shape(e) for e in probes],
                               [self.tensors[src].dtype for src, _ in reads])
        return self.add_op(op, reads, shapes, dts)

    def add_edge(self, edge: Edge) -> None:
        self.in_edges[edge.sink].append(edge)
        self.out_edges.setdefault(edge.src.op_id, []).append(edge)
        self.changed.add(edge.sink)
        self._keep_order(edge)
        self.version += 1

    def _keep_order(self, edge: Edge) -> None:
        """Forget the topological order if this read goes against it."""
        order = self._order
        if order is None or edge.src.op_id == edge.sink:
            return
        if isinstance(self.ops[edge.sink], MergeOp):
            return  # merges' reads close cycles: they do not order ops
        if order.get(edge.src.op_id, -1) >= order.get(edge.sink, -1):
            self._order = None

    def replace_op(self, op: Op) -> None:
        """Swap in a new version of an op (same id and outputs), e.g. with another bound."""
        if isinstance(self.ops.get(op.op_id), MergeOp) != isinstance(op, MergeOp):
            self._order = None  # its reads start or stop counting for the order
        self.ops[op.op_id] = op
        self.changed.add(op.op_id)
        self.version += 1

    def take_changed(self) -> set[int]:
        """The ops changed since the last call (that still exist); resets the record."""
        out = {i for i in self.changed if i in self.ops}
        self.changed = set()
        return out

    def set_in_edges(self, op_id: int, edges: list[Edge]) -> None:
        """Op `op_id` reads exactly `edges`, in order (positions are renumbered)."""
        self.changed.add(op_id)
        for e in self.in_edges.get(op_id, []):
            self.out_edges[e.src.op_id].remove(e)
        self.in_edges[op_id] = []
        for k, e in enumerate(edges):
            self.add_edge(replace(e, sink=op_id, sink_in=k))
        self.version += 1

    def remove_op(self, op_id: int) -> None:
        """Delete an op and every edge at it, readers' inputs included (they lose an input:
        use `remove_ops` for the safe form, or `induced_subgraph` to cut a graph)."""
        for e in self.in_edges.pop(op_id, []):
            self.out_edges[e.src.op_id].remove(e)
        for e in list(self.out_edges.get(op_id, [])):
            self.in_edges[e.sink].remove(e)
            self.changed.add(e.sink)
        self.out_edges.pop(op_id, None)
        self.changed.discard(op_id)
        if self._order is not None:
            self._order.pop(op_id, None)
        op = self.ops.pop(op_id)
        for k in range(op.num_outputs):
            self.tensors.pop(TensorId(op_id, k), None)
            self.block_stores.pop(TensorId(op_id, k), None)
        self.version += 1

    # ---------------------------------------------------------------- rewriting
    def set_input(
        self, edge: Edge, src: TensorId, expr: IndexSequence,
        cond: BooleanIndexValue | None | object = _SAME,
    ) -> Edge:
        """Make `edge`'s reader read `src` at `expr` instead, at the same input position
        (and under `cond` if given). Returns the new edge."""
        new_cond = edge.cond if cond is _SAME else cond
        assert new_cond is None or isinstance(new_cond, BooleanIndexValue), new_cond
        new = edge.moved(src, expr, new_cond)
        ins = self.in_edges[edge.sink]
        ins[ins.index(edge)] = new
        self.out_edges[edge.src.op_id].remove(edge)
        self.out_edges.setdefault(src.op_id, []).append(new)
        self.changed.add(edge.sink)
        self._keep_order(new)
        self.version += 1
        return new

    def redefine(self, op: Op, inputs: Iterable[tuple[TensorId, IndexSequence]] = ()) -> None:
        """Turn the op with `op.op_id` into `op`, reading `inputs` (point reads, no
        conditions). Its outputs, and so its readers, are unchanged: a local rewrite."""
        old = self.ops[op.op_id]
        if old.num_outputs != op.num_outputs:
            raise RewriteError(f"redefining {old!r} as {op!r} changes its outputs")
        self.ops[op.op_id] = op
        self.set_in_edges(op.op_id, [Edge(op.op_id, k, src, expr)
                                     for k, (src, expr) in enumerate(inputs)])

    def replace_all_uses(
        self, old: TensorId, new: TensorId, via: IndexSequence | None = None,
        where: Callable[[Edge], bool] | None = None,
    ) -> int:
        """Readers of `old` (those `where` accepts) read `new` instead. `via` is `new`'s
        point as a function of `old`'s domain variables (default: the identity, for equal
        domains); each read is composed with it exactly. All or nothing: raises
        RewriteError, changing nothing, when some read cannot be composed.
        Returns the number of redirected reads."""
        old_vars = self.ops[old.op_id].domain.variables
        if via is None:
            new_vars = self.ops[new.op_id].domain.variables
            if [v.name for v in new_vars] != [v.name for v in old_vars]:
                raise RewriteError(f"{old!r} and {new!r} have different domains: give `via`")
        plan = []
        for e in self.readers(old):
            if where is not None and not where(e):
                continue
            expr = e.expr if via is None else compose(via, old_vars, e.expr)
            if expr is None:
                raise RewriteError(f"cannot compose {e.expr} with {via} for {old!r} -> {new!r}")
            plan.append((e, expr))
        for e, expr in plan:
            self.set_input(e, new, expr)
        return len(plan)

    def can_replace_all_uses(self, old: TensorId, via: IndexSequence) -> bool:
        """Whether every read of `old` composes exactly with `via` (see replace_all_uses)."""
        old_vars = self.ops[old.op_id].domain.variables
        return all(compose(via, old_vars, e.expr) is not None for e in self.readers(old))

    def remove_ops(self, op_ids: Iterable[int]) -> None:
        """Delete ops that nothing outside the set reads and the user does not keep."""
        doomed = set(op_ids)
        for i in doomed:
            for e in self.out_edges.get(i, []):
                if e.sink not in doomed:
                    raise RewriteError(f"cannot remove {self.ops[i]!r}: "
                                       f"{self.ops[e.sink]!r} reads it")
            if any(TensorId(i, k) in self.keep for k in range(self.ops[i].num_outputs)):
                raise RewriteError(f"cannot remove {self.ops[i]!r}: the user keeps it")
        for i in sorted(doomed):
            self.remove_op(i)

    def reduce_domain(self, op_id: int, var: Symbol) -> None:
        """Op `op_id` stops iterating over `var` (its value does not vary along it): it
        loses the dimension and its readers drop the matching member of their reads."""
        op = self.ops[op_id]
        pos = op.domain.find_variable_index(var)
        for e in self.in_edges[op_id]:
            if var.name in e.var_names:
                raise RewriteError(f"{op!r} reads along {var}: its value varies with it")
        out = [e for e in self.out_edges.get(op_id, [])]
        if any(isinstance(e.expr[pos], Slice) for e in out):
            raise RewriteError(f"a reader of {op!r} reads a slice along {var}")
        self.ops[op_id] = replace(op, domain=op.domain.remove_dim(var))
        self.changed.add(op_id)
        for e in out:
            self.set_input(e, e.src, e.expr.skip_idx(pos))
        for k in range(op.num_outputs):
            self.block_stores.pop(TensorId(op_id, k), None)
        self.version += 1

    def extend_domain(self, op_ids: Iterable[int], var: Symbol) -> None:
        """Ops `op_ids` iterate over `var` too (the inverse of `reduce_domain`: their values
        may now vary along it); their readers read them at their own point of `var`, so a
        reader without `var` must be in `op_ids` (RewriteError otherwise). All at once:
        a merge and the value it reads back may both be extended."""
        grow = [i for i in op_ids if not self.ops[i].domain.has_dim(var)]
        doms = {i: self.ops[i].domain.union(Domain.from_vars([var])) for i in grow}
        for i in grow:
            for e in self.out_edges.get(i, []):
                if e.sink not in doms and not self.ops[e.sink].domain.has_dim(var):
                    raise RewriteError(f"{self.ops[e.sink]!r} reads {self.ops[i]!r} but does "
                                       f"not vary along {var}")
        for i in grow:
            op = self.ops[i]
            pos = doms[i].find_variable_index(var)
            self.ops[i] = replace(op, domain=doms[i])
            self.changed.add(i)
            for e in list(self.out_edges.get(i, [])):
                m = list(e.expr)
                self.set_input(e, e.src, IndexSequence(tuple(m[:pos]) + (var,) + tuple(m[pos:])))
            for k in range(op.num_outputs):
                self.block_stores.pop(TensorId(i, k), None)
        self.version += 1

    def induced_subgraph(self, op_ids: Iterable[int]) -> SDG:
        """A copy holding only `op_ids` and the edges between them (reads of other ops are
        cut), e.g. the part of a program left to schedule after a prologue."""
        chosen = set(op_ids)
        sub = self.copy()
        for i in [i for i in sub.ops if i not in chosen]:
            sub.remove_op(i)
        sub.keep = {t for t in sub.keep if t.op_id in chosen}
        return sub

    # ---------------------------------------------------------------- queries
    def info(self, tid: TensorId) -> TensorInfo:
        return self.tensors[tid]

    def op_of(self, tid: TensorId) -> Op:
        return self.ops[tid.op_id]

    def readers(self, tid: TensorId) -> list[Edge]:
        return [e for e in self.out_edges.get(tid.op_id, []) if e.src == tid]

    def read_shape(self, e: Edge) -> Shape:
        """The spatial shape a read delivers: slice lengths lead, then the tensor's shape."""
        lead = tuple(m.length().simplify() for m in e.expr if isinstance(m, Slice))
        return Shape.from_(lead + tuple(self.tensors[e.src].shape))

    def is_kept(self, op_id: int) -> bool:
        """Whether the user reads one of the op's tensors after the run."""
        return any(TensorId(op_id, k) in self.keep for k in range(self.ops[op_id].num_outputs))

    def topological(self) -> list[Op]:
        """Every op after the ops it reads, except reads by recurrences (merges), which
        close the program's cycles; ties go to the older op, so an unrewritten graph
        comes out in creation order. Rewrites may add ops that older ops read."""
        if self._order is None or len(self._order) != len(self.ops):
            self._order = {i: k for k, i in enumerate(self._kahn())}
        return [self.ops[i] for i in self._order]

    def _kahn(self) -> list[int]:
        merges = {i for i, op in self.ops.items() if isinstance(op, MergeOp)}
        indeg: dict[int, int] = {}
        for i, es in self.in_edges.items():
            n = 0
            if i not in merges:
                for e in es:
                    if e.src.op_id != i:
                        n += 1
            indeg[i] = n
        ready = [i for i, d in indeg.items() if d == 0]
        heapq.heapify(ready)
        order: list[int] = []
        while ready:
            i = heapq.heappop(ready)
            order.append(i)
            for e in self.out_edges.get(i, ()):
                if e.sink != i and e.sink not in merges:
                    indeg[e.sink] -= 1
                    if indeg[e.sink] == 0:
                        heapq.heappush(ready, e.sink)
        if len(order) < len(self.ops):  # a cycle without a merge: no order exists; keep ids
            order += sorted(i for i, d in indeg.items() if d > 0)
        return order

    def copy(self) -> SDG:
        new = copy.copy(self)
        new._order = dict(self._order) if self._order is not None else None
        new.ops = dict(self.ops)
        new.in_edges = {k: list(v) for k, v in self.in_edges.items()}
        new.out_edges = {k: list(v) for k, v in self.out_edges.items()}
        new.tensors = dict(self.tensors)
        new.bound_defs = dict(self.bound_defs)
        new.keep = set(self.keep)
        new.loop_dims = set(self.loop_dims)
        new.ended_bounds = set(self.ended_bounds)
        new.block_stores = dict(self.block_stores)
        new.changed = set(self.changed)
        new.names = dict(self.names)
        return new

    # ---------------------------------------------------------------- rendering
    def to_dot(self) -> str:
        lines = ["digraph sdg {", "  node [shape=box, fontname=monospace];"]
        for op in self.topological():
            dom = ",".join(str(v) for v in op.domain.variables)
            lines.append(f'  n{op.op_id} [label="{op!r}\\n[{dom}]"];')
        for edges in self.in_edges.values():
            for e in edges:
                label = str(e.expr) + (f" if {e.cond}" if e.cond is not None else "")
                label = label.replace('"', "'")
                lines.append(f'  n{e.src.op_id} -> n{e.sink} [label="{label}"];')
        lines.append("}")
        return "\n".join(lines)

    def render(self, path: str) -> None:
        """Write the graph as Graphviz DOT with edges labelled by their expressions."""
        with open(path, "w") as f:
            f.write(self.to_dot())
