"""Errors call a context's unnamed dimensions (`d0`/`D0`) by the names the user bound them to,
however they were bound: `vb = ctx.variables_and_bounds; (b, B), (t, T) = vb`, a helper
that returns them, a loop, a dict (`dims["t"]`), a dataclass (`dims.t`), `new_perm_var`.

`tempo/api/dim_names` renames the symbols themselves when the statement taking them is a
plain unpacking; `dim_names=` names them at construction (both win: only symbols still
named `d<k>`/`D<k>` are named here). This happens when an error's text is read from outside
the library (`core.errors.NAMER`), never when it is raised. Searched for the very Symbol
objects of the context the error is about (identity: symbols compare by name, and two
contexts both have a `d0`): the user frames on the error's path (the frame of the line the
error names first, then inner to outer, then their callers), then the module of that line.
Preferred, in order: a name held as a twin of its bound's (`t`/`T`, `dims.t`/`dims.T`; not
a loop variable left on the last symbol), one written in the error's line, the most local
frame, a plain name over a path into a container. A bound nobody holds takes its variable's
twin (`t` -> `T`), and the reverse. Names seen where a `with ctx:` block ended in a function
are the last resort, for errors read after that function returned. Naming never raises (the
text stays as raised)."""

from __future__ import annotations

import dataclasses
import functools
import linecache
import os
import re
import sys
import sysconfig
import types
import weakref
from collections.abc import Iterator
from types import FrameType
from typing import Any

from tempo.core import errors, naming
from tempo.core.index_expr import Symbol

_TEMPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_LIBRARY_ROOTS = tuple(
    os.path.abspath(p) + os.sep for p in {sysconfig.get_paths().get(k) for k in
                                         ("stdlib", "platstdlib", "purelib", "platlib")} if p)
DEFAULT = re.compile(r"[dD]\d+")
# A default name standing alone: not part of a word, an id (`add#2`, `SYM_d0`), a quoted
# tensor name ('d0'), an attribute, a call, a file name or directory (`d1.py:7`, `/d0/`).
_TOKEN = re.compile(r"(?<![\w#.'\"/\\])([dD]\d+)(?![\w#'\"(/\\]|\.\w)")
_MAX_FRAMES = 200
_MAX_ITEMS = 64
_MAX_DEPTH = 2

# (not in the error's line, frame rank, depth, private, scope, order): smaller preferred,
# after "twinned" (see `_choose`).
Rank = tuple[int, ...]
Cand = tuple[Rank, str, Symbol]


def rename(err: errors.TempoError, text: str, plain: bool = False) -> str:
    """`text` (the error's message and site line) with the default dimension names the user
    bound to other names replaced by those names; the site line (the user's code) is kept.
    `plain`: only names that are identifiers (`t`, not `dims["t"]`): a printed schedule
    and its generated source use them as loop variables."""
    tail = f"\n  at {err.site}" if err.site else ""
    if not tail or not text.endswith(tail):
        tail = ""
    body = text[: len(text) - len(tail)]
    tokens = set(_TOKEN.findall(body))
    if not tokens:
        return text
    mapping = names_for(err, tokens)
    if plain:
        mapping = {k: v for k, v in mapping.items() if v.isidentifier()}
    if not mapping:
        return text
    return _TOKEN.sub(lambda m: mapping.get(m[1], m[1]), body) + tail


def names_for(err: errors.TempoError, tokens: set[str]) -> dict[str, str]:
    """The user's name for each default symbol name in `tokens` that has one."""
    frames, owners = _frames(err)
    site = naming.site_parts(err.site)
    code = site[2] if site else ""
    owner = next((c for c in owners if any(s.name in tokens for s in _symbols(c))), None)
    owned = None if owner is None else {id(s) for s in _symbols(owner)}
    cands = [c for rank, frame in enumerate(frames) for c in _bindings(frame, rank, tokens, code)]
    module = _site_module(site, frames)
    if module is not None and site is not None:
        cands += _held([module], site[0], len(frames), tokens, code)
    cands = [c for c in cands if owned is None or id(c[2]) in owned]
    ranked: dict[str, tuple[Rank, str]] = {}
    for rank, path, sym in _choose(cands).values():  # (no owner: the best object per name)
        if sym.name not in ranked or rank < ranked[sym.name][0]:
            ranked[sym.name] = (rank, path)
    best = {name: path for name, (_, path) in ranked.items()}
    taken: set[str] = set()
    if owner is not None:  # names seen where the program's `with ctx:` ended
        for sym in _symbols(owner):
            name = owner._exit_names.get(id(sym))
            if name is not None and sym.name in tokens:
                best.setdefault(sym.name, name)
        taken = {s.name for s in _symbols(owner) if not DEFAULT.fullmatch(s.name)}
    for tok in tokens:  # a bound nobody bound is its variable's twin, and the reverse
        if tok not in best and tok.swapcase() in best:
            best[tok] = _twin(best[tok.swapcase()], upper=tok[0] == "D")
    final = [best.get(tok, tok) for tok in tokens]  # two dims printed alike: keep both
    return {tok: n for tok, n in best.items()
            if final.count(n) == 1 and n != tok and n not in taken}


def remember(ctx: Any, frame: FrameType | None) -> None:
    """Where a `with ctx:` block ends in a function: the names its locals give the context's
    symbols that still have default names, for errors read after the function returned (a
    program built in a function and compiled by its caller). A module's names outlive it.
    Each function is looked at once; once every such symbol has a name, later blocks skip
    this (`ctx._unnamed`)."""
    if frame is None or frame.f_code.co_name == "<module>":
        return
    if frame.f_code in ctx._exit_seen or not _user_file(frame.f_code.co_filename):
        return
    ctx._exit_seen.add(frame.f_code)  # a block in a loop is looked at once
    todo = {id(s) for s in _symbols(ctx) if DEFAULT.fullmatch(s.name)}
    tokens = {s.name for s in _symbols(ctx)}
    cands = [c for c in _bindings(frame, 0, tokens, "", scopes=1) if id(c[2]) in todo]
    for ident, (_, path, _) in _choose(cands).items():
        ctx._exit_names.setdefault(ident, path)
    if todo <= ctx._exit_names.keys():
        ctx._unnamed = False


def _choose(cands: list[Cand]) -> dict[int, Cand]:
    """Per symbol object, the preferred (rank, expression, symbol) among the candidates:
    first one whose bound (or variable) is held as its twin (`t` and `T`, `dims.t` and
    `dims.T`), unlike a loop variable left holding the last symbol (`for v, ub in ...`)."""
    paths: dict[str, set[str]] = {}
    for _, p, s in cands:
        paths.setdefault(s.name, set()).add(p)
    best: dict[int, tuple[Rank, str, Symbol]] = {}
    for key, path, sym in cands:
        others = paths.get(sym.name.swapcase(), set())
        twinned = any(_twins(path, q) for q in others)
        rank = (0 if twinned else 1, *key)
        old = best.get(id(sym))
        if old is None or rank < old[0]:
            best[id(sym)] = (rank, path, sym)
    return best


def _twins(p: str, q: str) -> bool:
    """`t`/`T`, or two members of one container (`dims.t`/`dims.T`, `pair[0]`/`pair[1]`)."""
    if p.isidentifier() and q.isidentifier():
        return p.swapcase() == q or p.upper() == q or p.lower() == q
    parent = re.compile(r"^(.*)(\.\w+|\[[^\[\]]*\])$")
    mp, mq = parent.match(p), parent.match(q)
    return mp is not None and mq is not None and mp[1] == mq[1]


# ---------------------------------------------------------------- frames
def _frames(err: BaseException) -> tuple[list[FrameType], list[Any]]:
    """The user frames on the error's path, the frame of its site line first, then inner
    to outer; and the contexts in play (the one a Tempo frame works on, the active ones,
    those the user's frames hold)."""
    from tempo.api.tempo_context_manager import TempoContext, _stack

    chain: list[FrameType] = []
    tb = err.__traceback__
    while tb is not None and len(chain) < _MAX_FRAMES:
        chain.append(tb.tb_frame)
        tb = tb.tb_next
    chain.reverse()  # innermost first
    outer = chain[-1].f_back if chain else sys._getframe(1)
    while outer is not None and len(chain) < _MAX_FRAMES:
        chain.append(outer)
        outer = outer.f_back
    owners: list[Any] = []
    user: list[FrameType] = []
    seen: set[int] = set()
    for frame in chain:
        if id(frame) in seen:
            continue
        seen.add(id(frame))
        if _user_file(frame.f_code.co_filename):
            user.append(frame)
            continue
        for key in ("self", "ctx"):
            value = frame.f_locals.get(key)
            if isinstance(value, TempoContext) and value not in owners:
                owners.append(value)
    for ctx in reversed(_stack()):
        if ctx not in owners:
            owners.append(ctx)
    for frame in user:
        for value in list(frame.f_locals.values()):
            if isinstance(value, TempoContext) and value not in owners:
                owners.append(value)
    site = naming.site_parts(getattr(err, "site", None))
    if site is not None:
        here = [f for f in user if f.f_lineno == site[1]
                and os.path.abspath(f.f_code.co_filename) == os.path.abspath(site[0])]
        user = here + [f for f in user if f not in here]
    return user, owners


@functools.lru_cache(maxsize=1024)
def _user_file(name: str) -> bool:
    """Code the user wrote: not Tempo's, not generated, not the standard library's or an
    installed package's (pytest, torch)."""
    if name.startswith("<"):
        return not name.startswith(("<tempo", "<frozen"))
    path = os.path.abspath(name)
    return not path.startswith(_TEMPO_ROOT) and not path.startswith(_LIBRARY_ROOTS)


def _symbols(ctx: Any) -> list[Symbol]:
    return [*ctx._vars, *ctx._bounds, *(s for pair in ctx._extra for s in pair)]


# ---------------------------------------------------------------- bindings
def _bindings(frame: FrameType, rank: int, tokens: set[str], code: str, scopes: int = 2
              ) -> Iterator[Cand]:
    """(preference, user's expression, symbol) for every default-named symbol in `tokens`
    that a local (or global) of `frame` holds, directly or inside a container."""
    spaces = [frame.f_locals]
    if scopes > 1 and frame.f_globals is not frame.f_locals:
        spaces.append(frame.f_globals)
    yield from _held(spaces, frame.f_code.co_filename, rank, tokens, code)


def _held(spaces: list[dict[str, Any]], file: str, rank: int, tokens: set[str], code: str
          ) -> Iterator[Cand]:
    """`_bindings` of namespaces (`file`: the source that spells their dict keys)."""
    for scope_no, scope in enumerate(spaces):
        for order, (name, value) in enumerate(list(scope.items())):
            if name == "_" or name.startswith("__") or not name.isidentifier():
                continue
            try:  # an object whose attributes cannot be read is skipped, not the naming
                found = list(_walk(name, value, 0))
            except Exception:  # noqa: BLE001 - naming is a courtesy
                continue
            for path, depth, sym in found:
                if sym.name not in tokens:
                    continue
                spelled = _written(path, code)
                if not spelled and "'" in path and _double_quoted(path, file, scope):
                    path = path.replace("'", '"')
                key = (0 if spelled else 1, rank, depth, int(name.startswith("_")), scope_no,
                       order)
                yield key, spelled or path, sym


def _site_module(site: tuple[str, int, str] | None, frames: list[FrameType]
                 ) -> dict[str, Any] | None:
    """The globals of the module the error's line is in, when no frame on the error's path
    runs in it (a program built by a function of `model.py` and compiled from `main.py`)."""
    if site is None:
        return None
    path = os.path.abspath(site[0])
    if any(os.path.abspath(f.f_code.co_filename) == path for f in frames):
        return None
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and os.path.abspath(file) == path:
            return vars(module)
    return None


def _walk(path: str, value: Any, depth: int) -> Iterator[tuple[str, int, Symbol]]:
    """Symbols in `value` with the expression that reaches them from `path`."""
    if isinstance(value, Symbol):
        if DEFAULT.fullmatch(value.name):
            yield path, depth, value
        return
    if depth >= _MAX_DEPTH:
        return
    if isinstance(value, (tuple, list)):
        if len(value) > _MAX_ITEMS:
            return
        fields = getattr(type(value), "_fields", None) or ()  # a namedtuple's: `dims.t`
        for i, item in enumerate(value):
            sub = f"{path}.{fields[i]}" if i < len(fields) else f"{path}[{i}]"
            yield from _walk(sub, item, depth + 1)
    elif isinstance(value, dict):
        if len(value) > _MAX_ITEMS:
            return
        for k, item in list(value.items()):
            if isinstance(k, (str, int)) and not isinstance(k, bool):
                yield from _walk(f"{path}[{k!r}]", item, depth + 1)
    elif _user_object(value):
        for attr, item in _attributes(value):
            if attr.isidentifier() and not attr.startswith("_"):
                yield from _walk(f"{path}.{attr}", item, depth + 1)


_PLAIN = (int, float, complex, str, bytes, bool, type(None), type, types.ModuleType,
          types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def _user_object(value: Any) -> bool:
    """An instance whose attributes the user names (`dims.t`): a dataclass, a namespace, or
    an object of a class defined in the user's code (or in a script whose module is gone,
    as `runpy` leaves it)."""
    if isinstance(value, _PLAIN):
        return False
    cls = type(value)
    known = _USER_TYPES.get(cls)
    if known is None:
        known = _USER_TYPES[cls] = _user_type(cls)
    return known


_USER_TYPES: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def _user_type(cls: type) -> bool:
    if issubclass(cls, types.SimpleNamespace) or dataclasses.is_dataclass(cls):
        return True
    name = cls.__module__
    if name == "__main__" or name not in sys.modules:
        return True
    file = getattr(sys.modules[name], "__file__", None)
    return isinstance(file, str) and _user_file(file)


def _attributes(value: Any) -> list[tuple[str, Any]]:
    d = getattr(value, "__dict__", None)
    if isinstance(d, dict):
        return list(d.items())[:_MAX_ITEMS]
    if dataclasses.is_dataclass(value):
        return [(f.name, getattr(value, f.name, None)) for f in dataclasses.fields(value)]
    return []


def _written(path: str, code: str) -> str:
    """`path` as the user's line spells it (either quote style for dict keys); '' when the
    line does not mention it."""
    if not code or path.split(".")[0].split("[")[0] not in code:
        return ""
    for spelled in (path, path.replace("'", '"')):
        if re.search(rf"(?<![\w.]){re.escape(spelled)}(?![\w(])", code):
            return spelled
    return ""


def _double_quoted(path: str, file: str, scope: dict[str, Any]) -> bool:
    """Whether the source `file` indexes the dict `path` starts from with double quotes
    (`dims["t"]`), so the error spells its keys so too."""
    root = path.split("[")[0]
    source = "".join(linecache.getlines(file, scope))
    return f'{root}["' in source and f"{root}['" not in source


def _twin(name: str, upper: bool) -> str:
    """The bound's name from its variable's (`t` -> `T`) or the reverse; a path reaching
    the other one says so (`dims.t.as_bound()`)."""
    twin = name.upper() if upper else name.lower()
    if name.isidentifier() and twin != name:
        return twin
    return f"{name}.as_bound()" if upper else f"{name}.as_var()"
