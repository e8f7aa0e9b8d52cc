"""Which joins the grouping pass's quick cycle test cannot decide alone.

The quick test's graph of a region's variables leaves out reads that move one way along a
variable every read moves that way (`w[i-1]`, `a[t-1]`): a path through one cannot come
back along it — unless it also passes an op without that variable, where its coordinate is
lost (`total = x[0:T].sum()`, read back at every t): a[t] → x[t+1] → total → b[t] returns
to t. Such a path enters an escape op (one without the variable) from an op with it and
leaves one for an op with it. `Escapes` keeps, per region space, the groups that reach a
*live* escape (entered from and leading back to the variable) and the groups such an
escape reaches, as the joins merge groups; a join of a group of one set with a group of
the other is left to the exact path sums. Both sets only grow, so keeping them costs
about one pass over the reads in all (an MLP over i has three live escapes, all in its
backward pass: none of its forward joins is searched)."""

from __future__ import annotations

from collections.abc import Iterable

Adjacency = dict[int, set[int]]


def _closure(start: Iterable[int], nxt: Adjacency) -> set[int]:
    seen: set[int] = set()
    work = list(start)
    while work:
        x = work.pop()
        if x not in seen:
            seen.add(x)
            work.extend(y for y in nxt[x] if y not in seen)
    return seen


class Escapes:
    """For one region space whose quick graph left out reads along `risky` variables;
    `succ`/`pred` are the pass's graph of every read between groups (merged as it joins)."""

    def __init__(self, has: dict[int, set[str]], risky: set[str], succ: Adjacency,
                 pred: Adjacency) -> None:
        self.succ, self.pred = succ, pred
        inside = [i for i in has if risky <= has[i]]
        after = _closure((y for x in inside for y in succ[x]), succ)
        before = _closure((y for x in inside for y in pred[x]), pred)
        escape = {i for i in has if not risky <= has[i]}
        self.entered = escape & after  # escape groups entered from the variable ...
        self.leaving = escape & before  # ... and leading back to it
        live = self.entered & self.leaving
        self.to_live = _closure(live, pred)  # groups with a path into a live escape
        self.from_live = _closure(live, succ)  # groups a live escape has a path to

    def undecided(self, a: int, b: int) -> bool:
        """Whether a path between groups a and b may pass a live escape."""
        return ((a in self.to_live and b in self.from_live)
                or (b in self.to_live and a in self.from_live))

    def merged(self, a: int, b: int) -> None:
        """Group b joined group a (the graphs are merged already)."""
        for s in (self.entered, self.leaving, self.to_live, self.from_live):
            if b in s:
                s.discard(b)
                s.add(a)
        live = a in self.entered and a in self.leaving
        for reach, nxt in ((self.to_live, self.pred), (self.from_live, self.succ)):
            if a in reach or live:  # a's new neighbours reach (or are reached) through it
                reach.add(a)
                work = [y for y in nxt[a] if y not in reach]
                while work:
                    x = work.pop()
                    if x not in reach:
                        reach.add(x)
                        work.extend(y for y in nxt[x] if y not in reach)
