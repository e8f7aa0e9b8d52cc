"""Out-of-range indices on jax, checked once per run.

jax cannot raise from compiled code: an index past its dimension selects NaN (or drops an
add). torch raises, and the contract is torch's (API.md: torch gather, index_add,
scatter_add). Reading every index on the host would wait for the device at every call
(measured: +17-20 % on a jax PPO whose step loop runs two index ops per point), so each
jax index kernel computes, in the same jitted call, a flag "some value left its range"
and leaves it on the device (`defer`); compiled functions holding index kernels (a
jitted region, a lax.scan step) return their kernels' flags beside their results
(`flagged`: traced kernels `report` to it). At the end of each executor entry (execute,
tick, ...: `JaxBackend.running`) one host read of all the run's flags raises
BackendError naming the first op whose index left its range (`check_pending`). The run's
later values were computed from jax's fill values, as the message says. Functions without
an index kernel return no flag: they cost nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from tempo.core import naming
from tempo.core.errors import BackendError

INDEX_OPS = frozenset({"index_select", "gather", "scatter_add", "index_add"})

_ACTIVE: list[list[tuple[Any, Any]]] = []  # trace-time collectors: (op, traced flag)
_PENDING: list[tuple[Sequence[Any], Any]] = []  # this run's (ops, flags on the device)


@contextmanager
def _collecting() -> Iterator[list[tuple[Any, Any]]]:
    flags: list[tuple[Any, Any]] = []
    _ACTIVE.append(flags)
    try:
        yield flags
    finally:
        _ACTIVE.pop()


def report(op: Any, flag: Any) -> None:
    """A traced kernel's flag (True: an index value out of range) for the innermost
    `flagged` trace; dropped outside one (jax's own semantics then hold)."""
    if _ACTIVE:
        _ACTIVE[-1].append((op, flag))


class Flagged:
    """`fn` returning `(result, flags)`: the flags its index kernels reported while it was
    traced, as one bool vector (None without any), their ops in `ops` (the same at every
    call: the trace is the same function)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.ops: list[Any] = []

    def __call__(self, *args: Any) -> tuple[Any, Any]:
        with _collecting() as got:
            out = self.fn(*args)
        self.ops = [op for op, _ in got]
        return out, (jnp.stack([jnp.asarray(f) for _, f in got]) if got else None)


def flagged(fn: Callable[..., Any]) -> Flagged:
    return Flagged(fn)


def defer(ops: Sequence[Any], flags: Any) -> None:
    """Flags a call returned (one per op in `ops`): traced ones go on to the enclosing
    trace, concrete ones wait on the device for `check_pending`."""
    if flags is None or not ops:
        return
    if isinstance(flags, jax.core.Tracer):
        for k, op in enumerate(ops):
            report(op, flags[k] if flags.ndim else flags)
        return
    _PENDING.append((ops, flags))


def check_pending() -> None:
    """One host read of the run's flags; BackendError naming the first op (in run order)
    whose index left its range."""
    got = take_pending()
    for ops, v in got:  # (np.asarray each: jax.device_get of a list is 8x slower)
        flat = np.asarray(v).reshape(-1)
        for k in np.flatnonzero(flat):
            op = ops[min(int(k), len(ops) - 1)]
            which = naming.op_label(op) if flat.size == len(ops) or len(ops) == 1 else \
                "one of " + "; ".join(naming.op_label(o) for o in ops)
            raise BackendError(
                f"the jax backend found an index out of range in {which}: "
                f"an index value left its dimension (as torch would refuse it). jax checks "
                f"once per run, so the values computed after it in this run used jax's "
                f"fill value (NaN) there", site=op.site)


def take_pending() -> list[tuple[Sequence[Any], Any]]:
    """The pending flags, removed (a run's start and end)."""
    got = list(_PENDING)
    _PENDING.clear()
    return got


def restore_pending(flags: list[tuple[Sequence[Any], Any]]) -> None:
    _PENDING[:0] = flags


def renamed(mark: int, members: Sequence[Any]) -> None:
    """The flags deferred since `mark` by a region body's kernels, one per index member
    call in body order, named by this region's own index members: equal regions share
    one body, built from the first region's members, whose lines may differ."""
    own = [m for m in members if m.name in INDEX_OPS]
    if len(_PENDING) - mark == len(own):
        for k in range(len(own)):
            _PENDING[mark + k] = ([own[k]], _PENDING[mark + k][1])


def pending() -> int:
    return len(_PENDING)


def scan_body(step: Callable[[Any, Any], tuple[Any, Any]]) -> tuple[Callable[..., Any], Flagged]:
    """A `lax.scan` body `step(carry, x) -> (carry, ys)` whose ys also carry its flags,
    and the Flagged whose `ops` name them; `scan_result` splits the scan's result."""
    f = flagged(step)

    def body(c: Any, x: Any) -> Any:
        (c2, ys), bad = f(c, x)
        return c2, (ys, bad)

    return body, f


def scan_result(result: Any) -> tuple[Any, Any]:
    """`((carry, ys), flags)` from the result of a scan over a `scan_body` (a step's
    flags OR-ed over the steps)."""
    c, (ys, bads) = result
    return (c, ys), (None if bads is None else jnp.any(bads, axis=0))
