"""isl AST → our schedule tree, with isl expressions printed as Python source."""

from __future__ import annotations

from typing import Protocol

import islpy as isl

from tempo.core.errors import ScheduleError
from tempo.core.sdg import TensorId
from tempo.schedule.tree import Exec, Free, If, Loop, Node, Seq, While

_T = isl.ast_expr_op_type
_N = isl.ast_node_type
_BINARY = {
    _T.add: "+",
    _T.sub: "-",
    _T.mul: "*",
    _T.fdiv_q: "//",
    _T.pdiv_q: "//",
    _T.pdiv_r: "%",
    _T.zdiv_r: "%",
    _T.eq: "==",
    _T.le: "<=",
    _T.lt: "<",
    _T.ge: ">=",
    _T.gt: ">",
    _T.__members__["and_"]: "and",  # by name: islpy's stub omits members named after keywords
    _T.and_then: "and",
    _T.__members__["or_"]: "or",
    _T.or_else: "or",
}


def expr_py(e: isl.AstExpr) -> str:
    """Python source equal to an isl AST expression (floor semantics match on ints)."""
    kind = e.get_type()
    if kind == isl.ast_expr_type.int:
        return str(e.get_val().to_python())
    if kind == isl.ast_expr_type.id:
        return e.get_id().get_name()
    op = _T(e.get_op_type())  # the enum member itself (islpy's stub says int)
    args = [expr_py(e.get_op_arg(i)) for i in range(e.get_op_n_arg())]
    if op in _BINARY:
        return f"({args[0]} {_BINARY[op]} {args[1]})"
    if op == _T.minus:
        return f"(-{args[0]})"
    if op == _T.max:
        return f"max({', '.join(args)})"
    if op == _T.min:
        return f"min({', '.join(args)})"
    if op == _T.div:  # exact division: the result is known to be integral
        return f"({args[0]} // {args[1]})"
    if op in (_T.cond, _T.select):
        return f"({args[1]} if {args[0]} else {args[2]})"
    raise ScheduleError(f"isl AST operator {op} is not supported in generated code")


def _upper_bound(cond: isl.AstExpr, it: str) -> str | None:
    """Exclusive Python upper bound from a loop condition `it <= e` / `it < e`."""
    if cond.get_type() != isl.ast_expr_type.op or cond.get_op_n_arg() != 2:
        return None
    lhs = cond.get_op_arg(0)
    if lhs.get_type() != isl.ast_expr_type.id or lhs.get_id().get_name() != it:
        return None
    rhs = expr_py(cond.get_op_arg(1))
    if cond.get_op_type() == _T.le:
        return f"{rhs} + 1"
    if cond.get_op_type() == _T.lt:
        return rhs
    return None


class Statements(Protocol):
    """What a user node of the AST names: a group of ops (by its rep) or a free statement."""

    groups: dict[int, list[int]]
    frees: dict[str, list[TensorId]]
    after_group: dict[int, list[TensorId]]


def ast_to_tree(node: isl.AstNode, prog: Statements) -> Node:
    kind = node.get_type()
    if kind == isl.ast_node_type.block:
        children = node.block_get_children()
        return Seq([ast_to_tree(children.get_at(i), prog) for i in range(children.n_ast_node())])
    if kind == _N.__members__["for_"]:  # by name, as in _BINARY
        it = expr_py(node.for_get_iterator())
        init = expr_py(node.for_get_init())
        step = int(node.for_get_inc().get_val().to_python())
        body = ast_to_tree(node.for_get_body(), prog)
        hi = _upper_bound(node.for_get_cond(), it)
        if hi is None:
            return While(it, init, expr_py(node.for_get_cond()), step, body)
        return Loop(it, init, hi, step, body)
    if kind == _N.__members__["if_"]:
        then = ast_to_tree(node.if_get_then_node(), prog)
        else_ = ast_to_tree(node.if_get_else_node(), prog) if node.if_has_else_node() else None
        return If(expr_py(node.if_get_cond()), then, else_)
    if kind == isl.ast_node_type.user:
        call = node.user_get_expr()
        name = call.get_op_arg(0).get_id().get_name()
        point = tuple(expr_py(call.get_op_arg(i)) for i in range(1, call.get_op_n_arg()))
        if name in prog.frees:
            return Seq([Free(tid, point) for tid in prog.frees[name]])
        rep = int(name[1:])
        nodes: list[Node] = [Exec(m, point) for m in prog.groups[rep]]
        nodes += [Free(tid, point) for tid in prog.after_group.get(rep, [])]
        return nodes[0] if len(nodes) == 1 else Seq(nodes)
    if kind == isl.ast_node_type.mark:
        return ast_to_tree(node.mark_get_node(), prog)
    raise ScheduleError(f"isl AST node {kind} is not supported")
