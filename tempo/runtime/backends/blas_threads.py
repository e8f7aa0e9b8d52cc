"""NumPy's BLAS on one thread while a program runs.

A Tempo program's products are small and many (a decode step's (16, 128) @ (128, 512)),
and OpenBLAS, which numpy ships, splits each over every core: the threads' start and
join cost more than the product, and on a shared machine a waiting thread spins on a
busy core. Measured here (2 cores, load 4-6, numpy 2.4 with OpenBLAS 0.3.31, one
process): (16, 128) @ (128, 512) float32 took 494 us wall / 254 us CPU on two threads
and 125 / 45 us on one; E2's causal GPT-2 core on numpy (B=16, T=64, U=16) decoded at
91 ms/token against 3.1 ms/token with one thread. The program's parallelism is the
schedule's, not BLAS's, so its steps run with BLAS limited to one thread
(`threadpoolctl`, restored after each step: ~26 us). A user who sets a BLAS thread
count in the environment (OPENBLAS_NUM_THREADS, MKL_NUM_THREADS, OMP_NUM_THREADS)
keeps it.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from typing import Any

_ENV = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")
_controller: list[Any] = []  # the process's ThreadpoolController, made at first use


def numpy_blas() -> Any:
    """threadpoolctl's controller of the BLAS numpy calls: the one numpy's wheel ships
    (under site-packages/numpy.libs or numpy/), else every BLAS loaded (a numpy linked
    to the system's). Other copies (scipy ships its own OpenBLAS) are not numpy's."""
    import numpy as np
    from threadpoolctl import ThreadpoolController

    blas = ThreadpoolController().select(user_api="blas")
    root = os.path.dirname(os.path.dirname(np.__file__))
    own = [os.path.join(root, "numpy.libs"), os.path.dirname(np.__file__)]
    paths = [lib.filepath for lib in blas.lib_controllers
             if any(lib.filepath.startswith(d + os.sep) for d in own)]
    return blas.select(filepath=paths) if paths else blas


def blas_on_one_thread() -> AbstractContextManager[Any]:
    """A scope in which numpy's BLAS runs on one thread (none if the user chose)."""
    if any(os.environ.get(v) for v in _ENV):
        return nullcontext()
    if not _controller:
        _controller.append(numpy_blas())
    return _controller[0].limit(limits=1)  # (set now, restored when the scope exits)
