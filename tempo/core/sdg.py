"""The symbolic dependence graph (SDG): ops by id, and exact edges between them.

An edge says "sink op at point p reads output k of source op at `expr(p)` where `cond(p)`
holds". `expr` has one member per source-domain variable: a point or a slice. The relation
is kept exact (never widened), because scheduling, freeing and autodiff depend on it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from tempo.core.domain import Domain
from tempo.core.dtype import DataType
from tempo.core.index_expr import BooleanIndexValue, IndexSequence, Symbol
from tempo.core.ops import Op
from tempo.core.shape import Shape


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
    # Storage choice (compiler pass): tensor -> domain position of its block dimension.
    block_stores: dict[TensorId, int] = field(default_factory=dict)
    # User names (`name=`) of ops' tensors, for error messages (`tempo.core.naming`).
    names: dict[int, str] = field(default_factory=dict)
    _next_id: int = 0

    # ---------------------------------------------------------------- building
    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

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
        for k, (shape, dt) in enumerate(zip(shapes, dtypes_)):
            self.tensors[TensorId(op.op_id, k)] = TensorInfo(shape, dt)
        for src, expr in inputs:
            self.add_edge(Edge(op.op_id, len(self.in_edges[op.op_id]), src, expr))
        return op

    def add_edge(self, edge: Edge) -> None:
        self.in_edges[edge.sink].append(edge)
        self.out_edges.setdefault(edge.src.op_id, []).append(edge)

    def replace_op(self, op: Op) -> None:
        """Swap in a new version of an op (same id), e.g. with an overridden bound."""
        self.ops[op.op_id] = op

    def set_in_edges(self, op_id: int, edges: list[Edge]) -> None:
        for e in self.in_edges.get(op_id, []):
            self.out_edges[e.src.op_id].remove(e)
        self.in_edges[op_id] = []
        for k, e in enumerate(edges):
            self.add_edge(replace(e, sink=op_id, sink_in=k))

    def remove_op(self, op_id: int) -> None:
        for e in self.in_edges.pop(op_id, []):
            self.out_edges[e.src.op_id].remove(e)
        for e in list(self.out_edges.get(op_id, [])):
            self.in_edges[e.sink].remove(e)
        self.out_edges.pop(op_id, None)
        op = self.ops.pop(op_id)
        for k in range(op.num_outputs):
            self.tensors.pop(TensorId(op_id, k), None)

    # ---------------------------------------------------------------- queries
    def info(self, tid: TensorId) -> TensorInfo:
        return self.tensors[tid]

    def op_of(self, tid: TensorId) -> Op:
        return self.ops[tid.op_id]

    def readers(self, tid: TensorId) -> list[Edge]:
        return [e for e in self.out_edges.get(tid.op_id, []) if e.src == tid]

    def topological(self) -> Iterator[Op]:
        """Ops in creation order (ids grow as ops are recorded; recurrences close later)."""
        for op_id in sorted(self.ops):
            yield self.ops[op_id]

    def copy(self) -> SDG:
        new = copy.copy(self)
        new.ops = dict(self.ops)
        new.in_edges = {k: list(v) for k, v in self.in_edges.items()}
        new.out_edges = {k: list(v) for k, v in self.out_edges.items()}
        new.tensors = dict(self.tensors)
        new.bound_defs = dict(self.bound_defs)
        new.keep = set(self.keep)
        new.block_stores = dict(self.block_stores)
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
