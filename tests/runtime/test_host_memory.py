"""The torch backend keeps freed host memory in glibc's heap (runtime/backends/host_memory):
a chain of 1 MiB tensor ops stops page-faulting every page of every fresh tensor."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

_SCRIPT = textwrap.dedent("""
    import resource, torch
    from tempo.runtime.backends.torch import TorchBackend
    a = torch.randn(64, 64, 1, 64); b = torch.randn(64, 64, 1, 64)
    def chain():  # four 1 MiB results alive at once, as in the PPO learner
        x = a * b; y = 1 - x; z = y * a; return z * b
    def faults(n=20):
        for _ in range(3): chain()
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(n): chain()
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    before = faults()
    TorchBackend("cpu")
    print(before, faults())
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc policy")
def test_cpu_backend_keeps_freed_tensors_for_reuse() -> None:
    # a fresh process (malloc's policy is per process) started at glibc's default
    # thresholds, fixed (their dynamic adjustment depends on the heap's history)
    env = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.trim_threshold=131072:"
               "glibc.malloc.mmap_threshold=131072")
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                         check=True, env=env).stdout.split()
    before, after = int(out[0]), int(out[1])
    pages = 20 * 4 * (1 << 20) // 4096  # every page of every result of 20 chains
    assert before > pages // 2, f"glibc's default did not page-fault ({before}): test is moot"
    assert after < pages // 20, (before, after)
