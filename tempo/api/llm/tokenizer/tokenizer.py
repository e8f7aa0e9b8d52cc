"""`RuntimeTokenizer`: what decoding needs of a tokenizer, whatever library implements it."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tempo.core.errors import TempoError, user_site

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor


class TokenizerError(TempoError, ValueError):
    """A tokenizer file is missing or its library is not installed."""


def require(package: str, purpose: str) -> None:
    """Raise a TokenizerError naming `package` when it cannot be imported."""
    import importlib.util

    if importlib.util.find_spec(package) is None:
        raise TokenizerError(f"{purpose} needs the {package!r} package, which is not "
                             f"installed (pip install {package})", site=user_site())


class RuntimeTokenizer(abc.ABC):
    """Ids in, text out; `stop_tokens` end a sequence (EOS and end-of-turn ids)."""

    @property
    @abc.abstractmethod
    def n_words(self) -> int: ...

    @property
    def vocab_size(self) -> int:
        return self.n_words

    @property
    @abc.abstractmethod
    def bos_id(self) -> int: ...

    @property
    @abc.abstractmethod
    def eos_id(self) -> int: ...

    @property
    def pad_id(self) -> int:
        """-1 when the vocabulary has no pad token (then `" "` pads)."""
        return -1

    @property
    def stop_tokens(self) -> list[int]:
        return [self.eos_id]

    @abc.abstractmethod
    def encode(self, s: str, bos: bool = False, eos: bool = False) -> list[int]: ...

    @abc.abstractmethod
    def decode(self, tokens: Sequence[int]) -> str: ...

    def _pad_token(self) -> int:
        if self.pad_id >= 0:
            return self.pad_id
        ids = self.encode(" ")
        if len(ids) != 1:
            raise TokenizerError("the tokenizer has no pad id and ' ' is not one token",
                                 site=user_site())
        return ids[0]

    def left_pad_token_batch(self, token_lists: Sequence[Sequence[int]],
                             max_prompt_len: int) -> RecurrentTensor:
        """A constant `(batch, max_len)` of `dtypes.default_int`, each row right-aligned
        (left-padded), `max_len` the longest prompt (at most `max_prompt_len`)."""
        import numpy as np

        from tempo.api.recurrent_tensor import RecurrentTensor as RT
        from tempo.core.dtype import dtypes

        if not token_lists or any(len(t) == 0 for t in token_lists):
            raise TokenizerError("left_pad_token_batch needs non-empty prompts",
                                 site=user_site())
        max_len = max(len(t) for t in token_lists)
        if max_len > max_prompt_len:
            raise TokenizerError(f"a prompt has {max_len} tokens, more than max_prompt_len "
                                 f"{max_prompt_len}", site=user_site())
        arr = np.full((len(token_lists), max_len), self._pad_token(),
                      dtype=dtypes.to_np(dtypes.default_int))
        for b, toks in enumerate(token_lists):
            arr[b, max_len - len(toks):] = np.asarray(toks)
        return RT.const(arr, dtype=dtypes.default_int)
