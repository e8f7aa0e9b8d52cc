"""accept7 helpers (user-level): sinks that keep numpy copies, a timed compile."""
import time

import numpy as np

from common import grab, grab_list  # noqa: F401  (../common.py)

COMPILES: list[float] = []


def np_of(v):
    if hasattr(v, "detach"):
        v = v.detach().cpu()
        if str(v.dtype) == "torch.bfloat16":
            v = v.float()
        return v.numpy()
    return np.array(v)


def compile_timed(ctx, bounds):
    """ctx.compile(bounds) (kept for the programs that call it)."""
    return ctx.compile(bounds)  # the harness times every compile
