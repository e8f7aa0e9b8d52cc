"""Out-of-range indices in traced jax code (a compiled region, a compiled loop).

jax cannot raise from compiled code: an index past its dimension selects NaN (or drops an
add). torch raises, and the contract is torch's (API.md: torch gather, index_add,
scatter_add). So while a compiled function is traced, each index kernel reports a flag
"some value left its range" (`report`) to the innermost `flagged` function, which returns
the flags' OR beside its result; the caller reads it on the host after the call and, if
set, runs the same code eagerly, where the kernels check their indices on the host and
raise IndexError naming the op (the executor names its line). Functions without an index
kernel return no flag (None): they cost no host read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import jax.numpy as jnp

_ACTIVE: list[list[Any]] = []


@contextmanager
def _collecting() -> Iterator[list[Any]]:
    flags: list[Any] = []
    _ACTIVE.append(flags)
    try:
        yield flags
    finally:
        _ACTIVE.pop()


def report(flag: Any) -> None:
    """A traced kernel's flag (True: an index value out of range); dropped outside a
    `flagged` trace (jax's own out-of-range semantics then hold)."""
    if _ACTIVE:
        _ACTIVE[-1].append(flag)


def either(flags: list[Any]) -> Any:
    """The OR of traced flags, None when there are none."""
    if not flags:
        return None
    return jnp.any(jnp.stack([jnp.asarray(f) for f in flags]))


def flagged(fn: Callable[..., Any]) -> Callable[..., tuple[Any, Any]]:
    """`fn` returning `(result, flag)`: the OR of what its index kernels reported while it
    was traced (None without any). Jit the result; read the flag on the host."""

    def traced(*args: Any) -> tuple[Any, Any]:
        with _collecting() as flags:
            out = fn(*args)
        return out, either(flags)

    return traced


def raised(flag: Any) -> bool:
    """Whether a flag a `flagged` call returned is set, passing a traced one (a compiled
    function called inside another's trace) on to the enclosing trace."""
    from jax.core import Tracer

    if flag is None:
        return False
    if isinstance(flag, Tracer):
        report(flag)
        return False
    return bool(flag)


def scan_body(step: Callable[[Any, Any], tuple[Any, Any]]) -> Callable[[Any, Any], Any]:
    """A `lax.scan` body `step(carry, x) -> (carry, ys)` whose ys also carry its flag;
    `scan_result` splits the scan's result back."""
    f = flagged(step)

    def body(c: Any, x: Any) -> Any:
        (c2, ys), bad = f(c, x)
        return c2, (ys, bad)

    return body


def scan_result(result: Any) -> tuple[Any, Any]:
    """`((carry, ys), flag)` from the result of a scan over a `scan_body`."""
    c, (ys, bads) = result
    return (c, ys), (None if bads is None else jnp.any(bads))


class OutOfRange(IndexError):
    """A compiled loop's flag: an index left its range (the loop then runs in Python,
    where the op's kernel raises naming it)."""
