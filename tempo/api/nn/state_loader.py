"""`StateDictLoader`: builds `InitFn`s reading from a flat (torch) state dict, with
symbols in the key (e.g. `layers.<d1>.wq.weight`) substituted by their runtime value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tempo.api.nn.init import InitFn
from tempo.core import index_expr as ie
from tempo.core.dtype import DataTypeLike


class StateDictLoader:
    """An immutable key prefix over a state dict; `append` extends the prefix."""

    def __init__(
        self,
        state_dict: Mapping[str, Any],
        parts: tuple[str | ie.Symbol, ...] = (),
        cast_to_dtype: DataTypeLike = None,
    ) -> None:
        self.state_dict = state_dict
        self.parts = parts
        self.cast_to_dtype = cast_to_dtype

    @staticmethod
    def from_torch_checkpoint(
        path: str, exec_cfg: Any = None, cast_to_dtype: DataTypeLike = None
    ) -> StateDictLoader:
        import torch

        sd = torch.load(path, map_location="cpu", weights_only=True)
        return StateDictLoader(sd, (), cast_to_dtype)

    @staticmethod
    def empty() -> StateDictLoader:
        return StateDictLoader({}, ())

    def append(self, part: str | ie.Symbol) -> StateDictLoader:
        return StateDictLoader(self.state_dict, (*self.parts, part), self.cast_to_dtype)

    def key_template(self, suffix: str) -> str:
        return ".".join(
            [f"<{p.name}>" if isinstance(p, ie.Symbol) else p for p in self.parts] + [suffix]
        )

    def load_tensor(self, suffix: str) -> InitFn | None:
        """An InitFn reading `<prefix>.<suffix>`, or None when the dict lacks the key."""
        syms = [p for p in self.parts if isinstance(p, ie.Symbol)]
        template = self.key_template(suffix)
        if not syms and template not in self.state_dict:
            return None
        if syms and not self.state_dict:
            return None

        def key(ts: Mapping[Any, int]) -> str:
            by_name = {getattr(k, "name", str(k)): v for k, v in ts.items()}
            out = template
            for s in syms:
                out = out.replace(f"<{s.name}>", str(by_name.get(s.name, 0)))
            return out

        def fn(*, shape: Any, dtype: DataTypeLike = None, domain: Any = None) -> Any:
            from tempo.api.recurrent_tensor import RecurrentTensor as RT

            dt = self.cast_to_dtype or dtype
            dom = tuple(syms) if syms else None
            return RT.init_from_statedict(
                self.state_dict, key if syms else template, shape, dt, dom
            )

        return fn
