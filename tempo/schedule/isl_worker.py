"""isl's scheduler in a forked worker, so that Ctrl-C reaches the user at once.

`compute_schedule` is one long C call that holds the interpreter: a SIGINT would only be
seen when it returns (minutes, on the programs that need the fallback). The worker gets the
constraints as isl text and sends the schedule back as isl text; the parent waits in
short `select` slices, so KeyboardInterrupt is raised within a fraction of a second and
the worker is killed. The same slices watch the worker's CPU time against a limit
(`IslTimeout`): isl's search cannot be interrupted from inside, but its process can."""

from __future__ import annotations

import os
import select
import signal
import threading
import time
import warnings
from collections.abc import Callable

import islpy as isl

from tempo.core.errors import ScheduleError


class IslScheduleError(Exception):
    """isl found no schedule (the message is isl's)."""


class IslTimeout(Exception):
    """isl's scheduler ran past its CPU limit and was stopped (`spent`: its CPU seconds)."""

    def __init__(self, spent: float) -> None:
        super().__init__(f"isl's scheduler stopped after {spent:.1f} CPU-s")
        self.spent = spent


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) of a running process from /proc (None where there is no
    /proc: the caller counts wall time instead)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def compute_schedule(sc: isl.ScheduleConstraints,
                     cpu_limit_s: float | None = None) -> isl.Schedule:
    """isl's schedule for `sc`; IslTimeout once the worker has spent `cpu_limit_s` CPU
    seconds (wall seconds where the CPU time cannot be read). Without fork (Windows) isl
    runs in this process and no limit can stop it."""
    text = sc.to_str()
    if not hasattr(os, "fork"):  # no fork (Windows): schedule in-process
        return _schedule_text(text, sc.get_ctx())
    r, w = os.pipe()
    held: list[int] = []
    restore = _hold_sigint(held)
    pid, parent = -1, os.getpid()
    try:
        with warnings.catch_warnings():
            # The worker only runs isl (C, its own allocations): the threads of torch/JAX
            # in this process never run in it, which is what the fork warning is about.
            warnings.simplefilter("ignore", RuntimeWarning)
            pid = os.fork()
    finally:
        if pid != 0:  # (the worker resets SIGINT itself)
            restore()
    if pid == 0:  # the worker: schedule, write the result, exit without cleanup
        os.close(r)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _die_with_parent(parent)
        try:
            sched = isl.ScheduleConstraints.read_from_str(isl.DEFAULT_CONTEXT, text)
            payload = b"OK" + sched.compute_schedule().to_str().encode()
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            payload = b"ER" + str(exc).encode()
        with os.fdopen(w, "wb") as f:
            f.write(payload)
        os._exit(0)
    os.close(w)
    chunks: list[bytes] = []
    try:
        if held:  # Ctrl-C came during the fork: the user's handler gets it now
            signal.raise_signal(signal.SIGINT)
        start = time.monotonic()
        while True:
            ready, _, _ = select.select([r], [], [], 0.1)
            if not ready:
                if cpu_limit_s is not None:
                    spent = cpu_seconds(pid)
                    spent = time.monotonic() - start if spent is None else spent
                    if spent > cpu_limit_s:
                        raise IslTimeout(spent)
                continue
            data = os.read(r, 1 << 20)
            if not data:
                break
            chunks.append(data)
    except BaseException:
        # Ctrl-C (or any error) returns at once: the worker is killed and reaped in the
        # background, since a child stuck in a page fault under memory pressure can take
        # seconds to die and the user should not wait for it.
        os.close(r)
        os.kill(pid, signal.SIGKILL)
        threading.Thread(target=_reap, args=(pid,), daemon=True,
                         name="isl-worker-reaper").start()
        raise
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = signal.Signals(os.WTERMSIG(status)).name
        raise ScheduleError(f"isl's scheduler was stopped by {sig} before it finished (a CPU "
                            "time or memory limit of this process?)")
    payload = b"".join(chunks)
    if not payload.startswith(b"OK"):
        raise IslScheduleError(payload[2:].decode(errors="replace") or "isl worker died")
    return isl.Schedule.read_from_str(sc.get_ctx(), payload[2:].decode())


def _hold_sigint(held: list[int]) -> Callable[[], None]:
    """Until the returned function is called, a SIGINT is recorded in `held` instead of
    raised: raised during `os.fork`, KeyboardInterrupt lands in an at-fork handler
    (logging's), which swallows it, and the parent then waits for the whole isl
    computation (seen under load). Only the main thread can set handlers; elsewhere
    nothing is held."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:
        return lambda: None
    signal.signal(signal.SIGINT, lambda *_: held.append(signal.SIGINT))

    def restore() -> None:
        signal.signal(signal.SIGINT, previous)

    return restore


def _die_with_parent(parent: int) -> None:
    """In the worker: end when the compiling process ends (killed, say, by a test runner's
    timeout), instead of scheduling on for minutes as an orphan. Linux's
    PR_SET_PDEATHSIG where it exists; a parent already gone by then ends the worker now."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the worker ends when isl returns
        pass
    if os.getppid() != parent:
        os._exit(1)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:  # already reaped elsewhere
        pass


def _schedule_text(text: str, ctx: isl.Context) -> isl.Schedule:
    try:
        return isl.ScheduleConstraints.read_from_str(ctx, text).compute_schedule()
    except isl.Error as exc:
        raise IslScheduleError(str(exc)) from exc
