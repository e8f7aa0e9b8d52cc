"""The torch backend keeps freed host memory in glibc's heap (runtime/backends/host_memory):
a chain of 1 MiB tensor ops stops page-faulting every page of every fresh tensor. The policy
is per process, so it composes with the other policies a process may have: tempo.memsave's
`freed_memory_returned()` wins while it measures and restores the backend's after, and a
policy the user set in glibc's environment is left alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="glibc's malloc policy")

_SCRIPT = textwrap.dedent("""
    import ctypes, json, resource, torch
    # glibc's default thresholds, fixed (their dynamic adjustment depends on the heap's
    # history); set through mallopt, which the backend cannot see, not the environment
    libc = ctypes.CDLL("libc.so.6"); libc.mallopt(-3, 131072); libc.mallopt(-1, 131072)
    from tempo.memsave import memory
    from tempo.runtime.backends.host_memory import keep_freed_host_memory
    from tempo.runtime.backends.torch import TorchBackend
    a = torch.randn(64, 64, 1, 64); b = torch.randn(64, 64, 1, 64)
    def chain():  # four 1 MiB results alive at once, as in the PPO learner
        x = a * b; y = 1 - x; z = y * a; return z * b
    def faults(n=20):
        for _ in range(3): chain()
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(n): chain()
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    def vm_drop(n=2 << 20):  # bytes of address space an n-float tensor's free gives back
        x = torch.ones(n); v = memory.vm_size_bytes(); del x
        return v - memory.vm_size_bytes()
    out = {"default": faults()}
    TorchBackend("cpu")
    out["keep"], out["keep_drop"] = faults(), vm_drop()
    with memory.freed_memory_returned():
        TorchBackend("cpu")  # made while memsave measures: memsave's policy stands
        out["kept_inside"] = keep_freed_host_memory()
        # 24 MiB: larger than the free heap the backend's policy kept (an 8 MiB tensor can
        # be served from the 8 MiB kept above, and its free then stays in the heap), below
        # that policy's 32 MiB mmap threshold (under it, this one would stay in the heap)
        out["memsave_drop"] = vm_drop(6 << 20)
    out["after"], out["after_drop"] = faults(), vm_drop()
    print(json.dumps(out))
""")
PAGES = 20 * 4 * (1 << 20) // 4096  # every page of every result of 20 chains


def _run(**env: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_",
                                                                    "TEMPO_MALLOPT"))} | env
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                         check=True, env=env).stdout
    return json.loads(out.splitlines()[-1])


def test_cpu_backend_keeps_freed_tensors_and_memsave_returns_them_in_one_process() -> None:
    got = _run()  # a fresh process: malloc's policy is per process
    assert got["default"] > PAGES // 2, f"glibc's default did not page-fault: moot ({got})"
    assert got["keep"] < PAGES // 10, got  # the backend's policy: freed tensors reused
    assert got["keep_drop"] < (1 << 20), got  # ... and kept in the heap
    # memsave's policy while it is active: frees go back to the OS (what it measures; fault
    # counts are not compared: holes the heap kept before still serve small tensors)
    assert not got["kept_inside"], got
    assert got["memsave_drop"] >= 24 << 20, got
    # and the backend's again after it
    assert got["after"] < PAGES // 10 and got["after_drop"] < (1 << 20), got


def test_a_users_malloc_environment_is_left_alone() -> None:
    got = _run(MALLOC_MMAP_THRESHOLD_="65536")
    assert got["keep"] > PAGES // 2, got  # 1 MiB tensors stay mmapped, as the user asked
    assert got["keep_drop"] >= 8 << 20, got
    assert got["after"] > PAGES // 2, got  # memsave restored the user's threshold
