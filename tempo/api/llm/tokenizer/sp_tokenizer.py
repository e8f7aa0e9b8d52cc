"""Llama-2's sentencepiece `tokenizer.model`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tempo.api.llm.tokenizer.tokenizer import RuntimeTokenizer, TokenizerError, require
from tempo.core.errors import user_site


class SPTokenizer(RuntimeTokenizer):
    """bos/eos/pad ids as the sentencepiece model defines them."""

    def __init__(self, model_path: str) -> None:
        require("sentencepiece", "reading a sentencepiece tokenizer.model")
        import sentencepiece as spm

        try:
            self.sp = spm.SentencePieceProcessor(model_file=model_path)
        except (OSError, RuntimeError) as exc:
            raise TokenizerError(f"{model_path} is not a sentencepiece model: {exc}",
                                 site=user_site()) from exc

    @staticmethod
    def from_checkpoint(checkpoint_dir: str) -> SPTokenizer:
        return SPTokenizer(str(find_model_file(checkpoint_dir)))

    @property
    def n_words(self) -> int:
        return int(self.sp.vocab_size())

    @property
    def bos_id(self) -> int:
        return int(self.sp.bos_id())

    @property
    def eos_id(self) -> int:
        return int(self.sp.eos_id())

    @property
    def pad_id(self) -> int:
        return int(self.sp.pad_id())

    def encode(self, s: str, bos: bool = False, eos: bool = False) -> list[int]:
        ids = list(self.sp.encode(s))
        return ([self.bos_id] if bos else []) + ids + ([self.eos_id] if eos else [])

    def decode(self, tokens: Sequence[int]) -> str:
        return str(self.sp.decode([int(t) for t in tokens]))


def find_model_file(checkpoint_dir: str) -> Path:
    """`tokenizer.model` in the directory or its `original/`."""
    for d in (Path(checkpoint_dir), Path(checkpoint_dir) / "original"):
        if (d / "tokenizer.model").exists():
            return d / "tokenizer.model"
    raise TokenizerError(f"no tokenizer.model in {checkpoint_dir!r} (or its original/)",
                         site=user_site())
