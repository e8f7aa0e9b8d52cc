"""What a tracked run's locals cost the accountant, decided when the code is generated.

A tracked run (a device cap, or debug mode) must see every live value, transients
included, but asking each value for its storage at run time (a tensor's `_base`, `nbytes`)
and updating a dict of holders costs more than most kernels it accounts for. A local's
bytes are known when the code is generated: the product of its shape (dims over loop
counters render as arithmetic) and its dtype's size. So the generated code charges a
local with one `_A.live += n` after it is made and credits it where it is dropped; only a
new peak calls into the accountant (which checks the cap and may swap stored points).

A view (a reshape, permute, expand or slice on a backend whose arrays share memory, or an
identity) costs nothing of its own: it keeps its base's bytes alive, so the base is
credited when both it and every local view of it are dropped. A view of a stored value,
or a recurrence's local taking a stored value, is the store's bytes (counted there).
"""

from __future__ import annotations

import re

from tempo.core import ops
from tempo.core.configs import TUNING
from tempo.core.sdg import SDG, TensorId

_VIEWS: tuple[type[ops.Op], ...] = (ops.ReshapeOp, ops.PermuteOp, ops.ExpandOp, ops.SliceOp)
"""Ops whose output is a view of their first input where arrays share memory."""

SHARING_BACKENDS = ("torch", "numpy")
"""Backends whose movement ops return views (jax arrays never share)."""


class Charges:
    """Emits the charge and credit statements of locals, in program order."""

    def __init__(self, sdg: SDG, local: set[TensorId], views_share: bool) -> None:
        self.sdg = sdg
        self.local = local
        self.views_share = views_share
        self.charged: dict[TensorId, str] = {}   # base local -> its bytes expression
        self.view_of: dict[TensorId, TensorId] = {}  # view local -> its base local
        self.views: dict[TensorId, set[TensorId]] = {}  # base -> its live views
        self.dropped: set[TensorId] = set()  # bases dropped while a view lives

    def nbytes(self, tid: TensorId, names: dict[str, str]) -> str:
        info = self.sdg.tensors[tid]
        parts = [str(info.dtype.repr_bytes)]
        for d in info.shape:
            parts.append(str(d) if isinstance(d, int) else f"({d.to_py(names)})")
        try:
            return str(eval("*".join(parts), {}))  # noqa: S307 - ints only: fold
        except NameError:
            return "*".join(parts)

    def made(self, op: ops.Op, tid: TensorId, names: dict[str, str],
             sources: list[TensorId | None], pad: str) -> list[str]:
        """Lines charging the local `tid` just made by `op` from `sources` (the tensors
        its value may be, None for a computed value)."""
        src = sources[0] if len(sources) == 1 else None
        alias = isinstance(op, ops.IdentOp | ops.MergeOp) or (
            self.views_share and isinstance(op, _VIEWS))
        if alias and all(s is not None and s not in self.local for s in sources):
            return []  # the store's bytes
        if alias and src is not None and src in self.local:
            base = self.view_of.get(src, src)
            if base in self.charged:
                self.view_of[tid] = base
                self.views.setdefault(base, set()).add(tid)
                return []
        n = self.nbytes(tid, names)
        self.charged[tid] = n
        return [f"{pad}_A.live += {n}",
                f"{pad}if _A.live > _A.peak:",
                f"{pad}    _A.high({tid.op_id}, {tid.output_id}, {n})"]

    @staticmethod
    def around_call(op: ops.Op, pad: str) -> tuple[list[str], list[str]]:
        """Lines before and after the call of a fused region: its scratch (the values it
        makes and drops inside, `RegionOp.scratch_bytes`) is charged for the call's
        duration; the outputs are then charged as locals or stores, as for any op."""
        n = getattr(op, "scratch_bytes", 0)
        if not n:
            return [], []
        return ([f"{pad}_A.live += {n}", f"{pad}if _A.live > _A.peak:",
                 f"{pad}    _A.high({op.op_id}, 0, {n})"], [f"{pad}_A.live -= {n}"])

    def dropped_line(self, tids: list[TensorId], pad: str) -> list[str]:
        """The credit for dropping the locals `tids`."""
        out: list[str] = []
        for tid in tids:
            base = self.view_of.pop(tid, None)
            if base is not None:
                live = self.views[base]
                live.discard(tid)
                if not live and base in self.dropped:
                    self.dropped.discard(base)
                    out.append(self.charged.pop(base))
            elif tid in self.charged:
                if self.views.get(tid):
                    self.dropped.add(tid)
                else:
                    out.append(self.charged.pop(tid))
        if not out:
            return []
        return [f"{pad}_A.live -= {' + '.join(out)}"]


_CHARGE = re.compile(r"^( *)_A\.live \+= (\d+)$")
_CREDIT = re.compile(r"^( *)_A\.live -= (\d+(?: \+ \d+)*)$")
_EXITS = re.compile(r"^\s*(break|continue|return|yield)\b")


def fold(lines: list[str]) -> tuple[list[str], dict[int, int]]:
    """Merge the static charges and credits of each statement list into one reservation:
    `_A.live += E` (with the peak check) where its first charge was and `_A.live -= E`
    where its last credit was, E the highest running sum of its charges in program
    order, when the list's charges sum to zero (every value it charges is credited in
    it), E <= TUNING.fold_bytes (its docstring says why) and no jump leaves the span.
    Live bytes then never fall below what the exact charges gave at any line, so the
    peak stays an upper bound. Returns the new lines and each kept old line's new index."""
    suites: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (header, indent) -> events
    stack: list[tuple[int, int]] = []
    for i, line in enumerate(lines):
        indent = len(line) - len(line.lstrip(" "))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        header = stack[-1][1] if stack else -1
        stack.append((indent, i))
        m = _CHARGE.match(line)
        if m and i + 2 < len(lines) and lines[i + 1].strip() == "if _A.live > _A.peak:":
            suites.setdefault((header, indent), []).append((i, int(m.group(2))))
            continue
        m = _CREDIT.match(line)
        if m:
            delta = -sum(int(x) for x in m.group(2).split(" + "))
            suites.setdefault((header, indent), []).append((i, delta))
    drop: set[int] = set()
    insert: dict[int, str] = {}
    for (_, indent), events in suites.items():
        run, top, at = 0, 0, events[0][0]
        for i, d in events:
            run += d
            if run > top:
                top, at = run, i
        first, last = events[0][0], events[-1][0]
        if run != 0 or top > TUNING.fold_bytes or len(events) < 2 or any(
                _EXITS.match(lines[k]) for k in range(first, last + 1)):
            continue
        for i, d in events:
            drop.update((i, i + 1, i + 2) if d > 0 else (i,))
        pad = " " * indent
        if top:
            op = _HIGH.match(lines[at + 2])
            who = f"{op.group(1)}, {op.group(2)}" if op else "-1, 0"
            insert[first] = (f"{pad}_A.live += {top}\n{pad}if _A.live > _A.peak:\n"
                             f"{pad}    _A.high({who}, {top})")
            insert[last] = f"{pad}_A.live -= {top}"
    out: list[str] = []
    where: dict[int, int] = {}
    for i, line in enumerate(lines):
        if i in insert:
            out.extend(insert[i].split("\n"))
        if i not in drop:
            where[i] = len(out)
            out.append(line)
    return out, where


_HIGH = re.compile(r"^\s*_A\.high\((-?\d+), (\d+), \d+\)$")


_DROP = re.compile(r"^( *)vs\d+_\d+ = None$")
_FREE = re.compile(r"^ *s\w+\.pop(?:_range)?\(.*\)$")
_GUARD = re.compile(r"^ *if .*:$")


def _free_end(lines: list[str], j: int, indent: int) -> int | None:
    """Where the statement at line j ends if it only frees stored points (a store's
    `pop` or `pop_range`, bare or under an `if` with nothing else and no `else`), else
    None. Frees only credit live bytes and check nothing: a credit moves past them."""
    if _FREE.match(lines[j]):
        return j + 1
    if not _GUARD.match(lines[j]):
        return None
    k = j + 1
    while k < len(lines) and _pad(lines[k]) > indent:
        if _pad(lines[k]) != indent + 4 or not _FREE.match(lines[k]):
            return None
        k += 1
    if k == j + 1 or (k < len(lines) and _pad(lines[k]) == indent and
                      lines[k].lstrip().startswith(("else", "elif"))):
        return None
    return k


def _pad(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _charge_at(lines: list[str], j: int, indent: int) -> int | None:
    """The bytes of the charge (with its peak check) starting at line j, at `indent`."""
    m = _CHARGE.match(lines[j]) if j + 2 < len(lines) else None
    if m is None or len(m.group(1)) != indent or \
            lines[j + 1] != f"{m.group(1)}if _A.live > _A.peak:" or not _HIGH.match(lines[j + 2]):
        return None
    return int(m.group(2))


def tighten(lines: list[str]) -> tuple[list[str], dict[int, int]]:
    """Exact merges of neighbouring charge statements, valid under a device cap (unlike
    `fold`, nothing is reserved early): credits separated only by dropped locals and
    frees of stored points (`_free_end`: the E1 decoder frees its weights under
    `if (d0 == 255):` between each kernel's charges) become one credit, after them,
    and a credit of `a` bytes right before a charge of `b` becomes one
    statement — `live -= a - b` without a peak check when a >= b (live is then no higher
    than bytes already checked; the merged credit then takes in what follows it the same
    way), else `live += b - a` and the charge's own check, which sees the same live bytes
    as before. Returns the new lines and each kept old line's new
    index."""
    out: list[str] = []
    where: dict[int, int] = {}
    i = 0
    while i < len(lines):
        m = _CREDIT.match(lines[i])
        if m is None:
            where[i] = len(out)
            out.append(lines[i])
            i += 1
            continue
        pad, indent = m.group(1), len(m.group(1))
        a = sum(int(x) for x in m.group(2).split(" + "))
        j = i + 1
        while True:
            while j < len(lines) and _pad(lines[j]) == indent:
                if _DROP.match(lines[j]):  # (a credit moves past dropped locals: nothing
                    where[j] = len(out)    # reads live there)
                    out.append(lines[j])
                elif (mc := _CREDIT.match(lines[j])) is not None:
                    a += sum(int(x) for x in mc.group(2).split(" + "))
                elif (end := _free_end(lines, j, indent)) is not None:
                    for k in range(j, end):  # (and past frees: they only credit)
                        where[k] = len(out)
                        out.append(lines[k])
                    j = end
                    continue
                else:
                    break
                j += 1
            b = _charge_at(lines, j, indent) if j < len(lines) else None
            if b is None or a < b:
                break
            a -= b  # still a credit: live stays below what was checked; merge on
            j += 3
        if b is None:
            if a:
                out.append(f"{pad}_A.live -= {a}")
            i = j
        else:
            out.extend([f"{pad}_A.live += {b - a}", lines[j + 1], lines[j + 2]])
            i = j + 3
    return out, where
