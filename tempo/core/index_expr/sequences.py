"""Slices and index sequences: `Slice` (a half-open range member) and `IndexSequence` (the
tuple of atoms that indexes every domain dimension of a tensor)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tempo.core.index_expr.base import IndexAtom, IndexExpr

# ----------------------------------------------------------------------------- slices, sequences


@dataclass(frozen=True, eq=False, repr=False)
class Slice(IndexAtom):
    """The half-open range `start:stop` (step 1); reading it adds a leading spatial dim."""

    start: IntIndexValue
    stop: IntIndexValue

    def children(self) -> tuple[IndexExpr, ...]:
        return (self.start, self.stop)

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        # Substitution keeps a slice a slice (collapsing is only done by `slice_`). ignore: its
        # own children come back, int expressions; children() types them loosely
        return Slice(c[0], c[1])  # type: ignore[arg-type]

    def __eq__(self, o: object) -> bool:
        return isinstance(o, IndexExpr) and self.struct_eq(o)

    def __hash__(self) -> int:
        return self._hash

    def is_point(self) -> bool:
        return False

    def is_growing_slice(self) -> bool:
        """`0:e` with a symbolic stop (a prefix that grows with the variables)."""
        return _const_int(self.start) == 0 and not self.stop.is_constant()

    def is_shrinking_slice(self) -> bool:
        """`e:B` with a symbolic start and a constant (bound-only) stop."""
        return not self.start.is_constant() and self.stop.is_constant()

    def evaluate(self, values: Mapping[Symbol, int]) -> slice:
        return slice(self.start.evaluate(values), self.stop.evaluate(values))

    def evaluate_shape(self, values: Mapping[Symbol, int]) -> tuple[int, ...]:
        return (int(self.stop.evaluate(values) - self.start.evaluate(values)),)

    def length(self) -> IntIndexValue:
        """The symbolic size `stop - start`."""
        return self.stop - self.start

    def bounds_py(self, names: Mapping[str, str] | None = None) -> tuple[str, str]:
        """Python sources of `(start, stop)`."""
        return self.start.to_py(names), self.stop.to_py(names)

    def to_py(self, names: Mapping[str, str] | None = None) -> str:
        s, e = self.bounds_py(names)
        return f"slice({s}, {e})"

    def __str__(self) -> str:
        return f"{self.start}:{self.stop}"


@dataclass(frozen=True, eq=False, repr=False)
class IndexSequence(IndexExpr):
    """A tuple of atoms indexing each domain dimension of a tensor."""

    members: tuple[IndexAtom, ...]

    def children(self) -> tuple[IndexExpr, ...]:
        return self.members

    def _rebuild(self, c: Sequence[IndexExpr]) -> IndexExpr:
        # ignore: own children (see IndexExpr._rebuild)
        return IndexSequence(tuple(c))  # type: ignore[arg-type]

    def remap(self, mapping: Mapping[Symbol, IndexExpr | int]) -> IndexSequence:
        """Substitution keeps a sequence a sequence (members are remapped one by one)."""
        out = super().remap(mapping)
        assert isinstance(out, IndexSequence)
        return out

    def __eq__(self, o: object) -> bool:
        return isinstance(o, IndexExpr) and self.struct_eq(o)

    def __hash__(self) -> int:
        return self._hash

    def __len__(self) -> int:
        return len(self.members)

    def __iter__(self) -> Iterator[IndexAtom]:
        return iter(self.members)

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return IndexSequence(self.members[i])
        return self.members[i]

    def replace_idx(self, i: int, atom: IndexAtom | int) -> IndexSequence:
        """A copy with member `i` replaced."""
        m = list(self.members)
        m[i] = lift_to_ie_atom(atom)
        return IndexSequence(tuple(m))

    def skip_idx(self, i: int) -> IndexSequence:
        """A copy without member `i`."""
        return IndexSequence(self.members[:i] + self.members[i + 1 :])

    def prepend_member(self, atom: IndexAtom | int) -> IndexSequence:
        """A copy with `atom` first."""
        return IndexSequence((lift_to_ie_atom(atom), *self.members))

    def append_member(self, atom: IndexAtom | int) -> IndexSequence:
        """A copy with `atom` last."""
        return IndexSequence((*self.members, lift_to_ie_atom(atom)))

    def num_slices(self) -> int:
        """How many members are slices."""
        return sum(isinstance(m, Slice) for m in self.members)

    def is_point(self) -> bool:
        return self.num_slices() == 0

    def is_basis(self) -> bool:
        """True when every member is a plain loop variable."""
        return all(isinstance(m, Symbol) and not m.is_bound for m in self.members)

    def evaluate(self, values: Mapping[Symbol, int]) -> tuple[Any, ...]:
        return tuple(m.evaluate(values) for m in self.members)

    def evaluate_shape(self, values: Mapping[Symbol, int]) -> tuple[int, ...]:
        return tuple(d for m in self.members for d in m.evaluate_shape(values))

    def members_py(self, names: Mapping[str, str] | None = None) -> tuple[str, ...]:
        """Python sources of each member (a slice member gives `slice(start, stop)`)."""
        return tuple(m.to_py(names) for m in self.members)

    def to_py(self, names: Mapping[str, str] | None = None) -> str:
        return "(" + "".join(f"{s}, " for s in self.members_py(names)) + ")"

    def __str__(self) -> str:
        return "[" + ", ".join(str(m) for m in self.members) + "]"


# Call-time dependencies, imported last to close the node <-> constructor cycle (see __init__).
from tempo.core.index_expr.functions import lift_to_ie_atom  # noqa: E402
from tempo.core.index_expr.int_nodes import IntIndexValue, Symbol  # noqa: E402
from tempo.core.index_expr.simplify import _const_int  # noqa: E402
