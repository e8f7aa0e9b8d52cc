"""Shared helpers for the acceptance programs (user-level only)."""
import numpy as np

def grab(store, key):
    """A sink callback that stores a numpy copy of the backend tensor."""
    def f(v):
        if hasattr(v, "detach"):
            v = v.detach().cpu().numpy()
        store[key] = np.array(v)
    return f

def grab_list(store, key):
    def f(v):
        if hasattr(v, "detach"):
            v = v.detach().cpu().numpy()
        store.setdefault(key, []).append(np.array(v))
    return f
