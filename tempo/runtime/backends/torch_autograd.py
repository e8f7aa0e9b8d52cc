"""Generated torch code runs below torch's autograd dispatch keys; user functions do not.

Tempo differentiates programs itself (the SDG's gradient ops), so no tensor the generated
code makes needs torch's autograd. Yet every torch call from it still passed through the
autograd dispatch key (a check of its inputs' `requires_grad`, and for in-place ops the
version bump's bookkeeping): measured on the E5 rollout step (13 torch calls: three
Linear+tanh folds, the clip and the env update, one thread), 43.3 -> 38.2 us per step
with the autograd keys excluded (torch's `AutoDispatchBelowAutograd` guard), ~0.4 us a
call; the whole E5 iteration (~1,400 calls) 9.70 -> 8.78 ms (min of 31, load 11).
`torch.inference_mode` saves a little more but makes inference tensors, which have no
version counter (the linear folds' prepared weights check it: `region_folds.Prepared`)
and which a user may not update in place after the run; the guard changes neither:
tensors stay ordinary, versions still count, only autograd is skipped.

A user function (UDF source, map or sink) may use torch's autograd itself (a model it
trains, a gradient it checks), so its kernels re-enable the keys the guard excluded for
the duration of the call (`with_autograd`). A tensor a UDF returns that requires grad is
used as a value by the generated code, as it always was (no gradient flows through a
UDF: `tempo.prims.udf`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import torch

Fn = Callable[..., Any]


def below_autograd() -> AbstractContextManager[Any]:
    """The guard the executor runs generated torch code in (restores the keys on exit,
    also when the code raises)."""
    return torch._C._AutoDispatchBelowAutograd()


@functools.cache
def autograd_keys() -> tuple[Any, ...]:
    """The autograd dispatch keys `below_autograd` excludes (found once by entering it:
    the set depends on the torch build; by name, so that a first call made inside the
    guard finds them too)."""
    excluded = torch._C._dispatch_tls_is_dispatch_key_excluded
    alias = torch._C._dispatch_is_alias_key
    with below_autograd():  # (alias keys, e.g. `Autograd`, answer for themselves: skipped)
        inside = [k for k in torch._C.DispatchKey.__members__.values()
                  if not alias(k) and excluded(k)]
    return tuple(sorted({k for k in inside if k.name.startswith("Autograd")},
                        key=lambda k: k.name))


def with_autograd(fn: Fn) -> Fn:
    """`fn` called with the autograd keys that an enclosing `below_autograd` excluded
    included again (as outside the run), and excluded again afterwards."""
    keys = autograd_keys()
    excluded = torch._C._dispatch_tls_is_dispatch_key_excluded
    set_excluded = torch._C._dispatch_tls_set_dispatch_key_excluded

    def call(*args: Any) -> Any:
        off = [k for k in keys if excluded(k)]
        if not off:
            return fn(*args)
        for k in off:
            set_excluded(k, False)
        try:
            return fn(*args)
        finally:
            for k in off:
                set_excluded(k, True)

    return call
