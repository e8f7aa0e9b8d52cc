"""accept8 helpers (user-level): numpy copies of sink values, deterministic weight inits."""
import numpy as np

from common import grab, grab_list  # noqa: F401  (../common.py)

COMPILES: list[float] = []


def np_of(v):
    """A numpy copy of a backend tensor (bf16 via float32)."""
    if hasattr(v, "detach"):
        v = v.detach().cpu()
        if str(v.dtype) == "torch.bfloat16":
            v = v.float()
        return v.numpy()
    return np.array(v)


class Inits:
    """An init function (keywords shape=, dtype=, domain=) handing out seeded normal weights
    and remembering them in call order, so a torch reference can use the same ones."""

    def __init__(self, seed: int, scale: float = 0.4):
        self.g = np.random.default_rng(seed)
        self.scale = scale
        self.made: list[np.ndarray] = []

    def __call__(self, shape, dtype=None, domain=None, **_):
        from tempo.api import RecurrentTensor as RT
        a = (self.g.normal(size=tuple(int(s) for s in shape)) * self.scale).astype(np.float32)
        self.made.append(a)
        return RT.const(a)
