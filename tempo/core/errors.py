"""User-facing errors. Every error a user can cause is a `TempoError` that names the tensor,
the offending expression or shape, and the user's source line (found by `user_site`)."""

from __future__ import annotations

import copy
import linecache
import os
import sys
from collections.abc import Callable
from types import FrameType

_TEMPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Programs written with Tempo's API inside the package (the benchmarks' systems, the demo):
# an error in one names its line, as a user's program's would, not the line that called it.
_PROGRAMS = (os.path.join(_TEMPO_ROOT, "bench") + os.sep, os.path.join(_TEMPO_ROOT, "demo.py"))


def called_from_tempo(depth: int) -> bool:
    """Whether the frame `depth` levels above the caller is Tempo's own library code."""
    path = os.path.abspath(sys._getframe(depth + 1).f_code.co_filename)
    return path.startswith(_TEMPO_ROOT + os.sep)


def user_site(skip_tempo: bool = True) -> str:
    """The innermost stack frame outside the tempo package (the benchmarks' and the demo's
    programs count as outside: they are programs written with the API), as
    'file:line: code', skipping dataclass machinery (generated `__init__`s,
    `dataclasses.replace`) and contextlib's (`with ctx.when(...)` enters Tempo's generator
    through it). Walks the frames itself, so only the chosen line's text is read (every
    recorded op calls this)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        generated = (name == "<string>" and frame.f_code.co_name == "__init__"
                     or name.endswith((os.sep + "dataclasses.py", os.sep + "contextlib.py")))
        path = os.path.abspath(name)
        inside = (skip_tempo and path.startswith(_TEMPO_ROOT + os.sep)
                  and not path.startswith(_PROGRAMS))
        if not generated and not inside:
            code = linecache.getline(name, frame.f_lineno).strip()
            return f"{name}:{frame.f_lineno}: {code}"
        frame = frame.f_back
    return "<unknown>"


# Renames what an error's text calls by internal names (`d0`, `D1`) to the names the user
# bound those objects to (set by tempo.api.error_names; core imports nothing of ours).
# Called only when the text is read, with the error and its text, so raising costs nothing
# more and errors caught inside the library (control flow) never pay for it.
NAMER: Callable[..., str] | None = None  # (error, text, plain=False) -> text


def in_user_names(text: str, plain: bool = False) -> str:
    """`text` (a warning, a printed schedule) with default dimension names (`d0`, `D1`) in
    the names the user's code binds them to, as an error's text is (`NAMER`, from the frames
    on the current stack); the text as is when nothing names them or naming fails. `plain`:
    only names that are identifiers, not paths into containers (`dims["t"]`)."""
    namer = NAMER
    if namer is None:
        return text
    try:
        named = namer(TempoError(text), text, plain=plain)
    except Exception:  # naming is a courtesy: it never hides the text itself
        return text
    return named if isinstance(named, str) else text


class TempoError(Exception):
    """Base of every error a Tempo user can cause."""

    def __init__(self, message: str, *, site: str | None = None) -> None:
        self.site = site
        self.message = message  # without the site line, for errors that wrap this one
        super().__init__(message if site is None else f"{message}\n  at {site}")

    def __str__(self) -> str:
        """The message in the user's names (`NAMER`) when read from outside the library (a
        user, pytest, a traceback); the text as raised if naming fails. The first argument
        as is (a KeyError subclass would quote it)."""
        text = str(self.args[0]) if len(self.args) == 1 else super().__str__()
        namer = NAMER
        if namer is None:
            return text
        done = self.__dict__.get("_named_text")
        if done is not None and done[0] == text:
            return str(done[1])
        try:
            if _read_by_tempo():
                return text  # the library quoting it (a wrapping error is named itself)
            named = namer(self, text)
        except Exception:  # naming is a courtesy: it never hides the error itself
            return text
        if not isinstance(named, str):
            return text
        self.__dict__["_named_text"] = (text, named)
        return named

    def at(self, site: str) -> TempoError:
        """This error (same class and message) named at `site` instead: for errors whose
        cause is a user call that does not appear on the stack where they are found."""
        out = copy.copy(self)
        out.site = site
        out.args = (f"{self.message}\n  at {site}",)
        return out


def _read_by_tempo() -> bool:
    """Whether Tempo's own code asked for an error's text (two frames up: __str__'s caller);
    False when nothing above __str__ is Python (the interpreter printing a traceback)."""
    frame = sys._getframe(1).f_back
    return frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
        _TEMPO_ROOT + os.sep)


class IndexExprError(TempoError, ValueError):
    """A malformed or out-of-range index expression (unknown symbol, constant past a bound)."""


class SymbolicIntError(IndexExprError, TypeError):
    """A symbol or index expression used where Python needs an int (`range(T)`, a list
    index): a TypeError too, so code that probes for ints (numpy, torch) still does."""


class DefinitionError(TempoError, ValueError):
    """A placeholder definition that can never take effect (an earlier branch shadows it)."""


class ArgumentError(TempoError, ValueError):
    """An argument value a function does not accept (a negative learning rate, b1 >= 1)."""


class ShapeError(TempoError, ValueError):
    """Spatial shapes that do not fit together (broadcast, matmul, definition)."""


class DTypeError(TempoError, TypeError):
    """A dtype that an op or a definition does not accept."""


class DomainError(TempoError, ValueError):
    """A domain that does not fit (definition value over a larger domain, unknown dim)."""


class BoundError(TempoError, ValueError):
    """A missing or invalid bound at compile time, or a boolean bound that reached the
    maximum it was not given (`{T: done}` takes `default_dim_upper_bound_size`)."""


class ScheduleError(TempoError):
    """No schedule exists: a cycle of same-point dependences, or undefined reads."""


class ScheduleTimeError(ScheduleError):
    """isl's scheduler (the fallback for programs Tempo's own scheduler cannot order) spent
    its CPU budget (`Tuning.isl_schedule_cpu_s`) without finishing."""


class ConfigError(TempoError, ValueError):
    """An invalid ExecutionConfig."""


class BackendError(TempoError):
    """A backend that cannot run an op for the given dtype or device."""


class TempoMemoryError(TempoError, MemoryError):
    """Live device bytes would exceed the configured device-memory cap."""


class UnsupportedError(TempoError, NotImplementedError):
    """An operation the object does not define (e.g. Categorical has no mean, API §6.3)."""


class NoSuchMethodError(TempoError, AttributeError):
    """A torch.Tensor method RecurrentTensor spells otherwise (`masked_fill`, `topk`, `view`):
    an AttributeError as Python expects (hasattr stays False), saying what to write."""
