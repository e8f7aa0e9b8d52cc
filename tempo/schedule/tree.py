"""Our schedule tree: what isl's AST becomes, and what the runtime turns into Python.

Expressions are Python source strings over loop counters and bound names, so code
generation inlines them and nothing is evaluated by tree walking at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tempo.core.sdg import TensorId


@dataclass
class Node:
    """Base of schedule-tree nodes."""


@dataclass
class Seq(Node):
    children: list[Node] = field(default_factory=list)


@dataclass
class Loop(Node):
    """for counter in range(lo, hi, step): body (hi exclusive)."""

    counter: str
    lo: str
    hi: str
    step: int
    body: Node


@dataclass
class While(Node):
    """A loop whose condition isl could not express as an upper bound."""

    counter: str
    init: str
    cond: str
    step: int
    body: Node


@dataclass
class If(Node):
    cond: str
    then: Node
    else_: Node | None = None


@dataclass
class Exec(Node):
    """Execute op `op_id` at the point whose domain coordinates are `point`."""

    op_id: int
    point: tuple[str, ...]


@dataclass
class Free(Node):
    """Release the stored point `point` of tensor `tensor` (after its last reader)."""

    tensor: TensorId
    point: tuple[str, ...]


@dataclass
class Offload(Node):
    """Move the stored point `point` of `tensor` to the host pool: it is not read again
    until a `Fetch` (placed by schedule/swaps.py, ARCHITECTURE §6)."""

    tensor: TensorId
    point: tuple[str, ...]


@dataclass
class Fetch(Node):
    """Bring back to the device the points of `tensor` that op `reader` reads through its
    input `edge` at `point` (that op's domain coordinates): a no-op for points already
    there. Placed before the read, and `ahead` iterations early as a prefetch."""

    tensor: TensorId
    reader: int
    edge: int
    point: tuple[str, ...]
    ahead: int = 0


def render(node: Node, describe: dict[int, str] | None = None, indent: int = 0,
           dims: dict[int, tuple[str, ...]] | None = None) -> str:
    """The tree as readable pseudo-Python (what `executor.schedule_text()` shows); with
    `dims` (op id -> its dimension names) a point prints as `[t=c1, b=c0]`."""
    pad = "    " * indent
    describe = describe or {}

    def sub(n: Node, extra: int = 1) -> str:
        return render(n, describe, indent + extra, dims)

    if isinstance(node, Seq):
        return "".join(sub(c, 0) for c in node.children) or f"{pad}pass\n"
    if isinstance(node, Loop):
        step = f", {node.step}" if node.step != 1 else ""
        head = f"{pad}for {node.counter} in range({node.lo}, {node.hi}{step}):\n"
        return head + sub(node.body)
    if isinstance(node, While):
        head = f"{pad}{node.counter} = {node.init}\n{pad}while {node.cond}:\n"
        return head + sub(node.body) + f"{pad}    {node.counter} += {node.step}\n"
    if isinstance(node, If):
        out = f"{pad}if {node.cond}:\n" + sub(node.then)
        if node.else_ is not None:
            out += f"{pad}else:\n" + sub(node.else_)
        return out
    if isinstance(node, Exec):
        name = describe.get(node.op_id, f"op{node.op_id}")
        names = (dims or {}).get(node.op_id)
        point = node.point if names is None else [f"{n}={p}" for n, p in zip(names, node.point)]
        return f"{pad}{name}[{', '.join(point)}]\n"
    if isinstance(node, Free):
        return f"{pad}free {node.tensor!r}[{', '.join(node.point)}]\n"
    if isinstance(node, Offload):
        return f"{pad}offload {node.tensor!r}[{', '.join(node.point)}]\n"
    if isinstance(node, Fetch):
        name = describe.get(node.reader, f"op{node.reader}")
        what = "prefetch" if node.ahead else "fetch"
        return (f"{pad}{what} {node.tensor!r} read by {name}[{', '.join(node.point)}]\n")
    raise TypeError(f"unknown schedule node {node!r}")


def walk(node: Node) -> list[Node]:
    """Every node of the tree, pre-order."""
    out: list[Node] = [node]
    if isinstance(node, Seq):
        for c in node.children:
            out += walk(c)
    elif isinstance(node, Loop | While):
        out += walk(node.body)
    elif isinstance(node, If):
        out += walk(node.then)
        if node.else_ is not None:
            out += walk(node.else_)
    return out
