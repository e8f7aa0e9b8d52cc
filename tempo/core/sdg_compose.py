"""Composing reads: when `y[p] = x[via(p)]`, a read `y[outer(q)]` is the read
`x[via(outer(q))]`. Rewrites use this to bypass aliases (identities, trivial merges)
without widening any relation: a composition that is not exact is refused (None)."""

from __future__ import annotations

from collections.abc import Sequence

from tempo.core.index_expr import (
    IndexAtom,
    IndexSequence,
    IntIndexValue,
    Slice,
    Symbol,
    lift_to_ie_atom,
)


def shift_of(member: IndexAtom, var: Symbol) -> int | None:
    """c when `member` is the point `var + c` (c a constant int), else None."""
    if isinstance(member, Slice) or var.name not in {s.name for s in member.vars_used()}:
        return None
    assert isinstance(member, IntIndexValue), member  # not a slice: a point read
    diff = (member - var).simplify()
    c = diff.try_eval({}) if not diff.vars_used() and not diff.bound_symbols_used() else None
    return c if isinstance(c, int) and not isinstance(c, bool) else None


def compose(
    via: IndexSequence, via_vars: Sequence[Symbol], outer: IndexSequence
) -> IndexSequence | None:
    """The read of `x` equal to reading `y` at `outer`, where `y` over `via_vars` reads
    `x` at `via`; None when it is not representable exactly.

    Slices in `outer` pass through only where their variable appears in exactly one member
    of `via`, as `var + c`, and the leading dims keep their order (outer's slice dims first,
    then via's own slice dims)."""
    if len(outer) != len(via_vars):
        return None
    points = {v: m for v, m in zip(via_vars, outer) if not isinstance(m, Slice)}
    members = [lift_to_ie_atom(m.remap(points)) for m in via]  # remapping keeps atoms atoms
    sliced_at: list[int] = []
    for v, m in zip(via_vars, outer):
        if not isinstance(m, Slice):
            continue
        users = [k for k, w in enumerate(via) if v.name in {s.name for s in w.vars_used()}]
        if len(users) != 1:
            return None  # y does not vary along v (a broadcast dim) or mixes it in
        k = users[0]
        c = shift_of(via[k], v)
        if c is None:
            return None
        members[k] = Slice(_plus(m.start, c), _plus(m.stop, c))
        sliced_at.append(k)
    if sliced_at != sorted(sliced_at):
        return None
    own_slices = [k for k, w in enumerate(via) if isinstance(w, Slice)]
    if sliced_at and own_slices and max(sliced_at) > min(own_slices):
        return None
    return IndexSequence(tuple(members))


def _plus(e: IntIndexValue, c: int) -> IntIndexValue:
    return e if c == 0 else (e + c)


def drop_member(expr: IndexSequence, position: int) -> IndexSequence:
    """The read without the member at `position` (its source lost that dimension)."""
    return expr.skip_idx(position)
