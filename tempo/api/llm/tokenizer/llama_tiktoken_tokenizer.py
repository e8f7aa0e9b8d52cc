"""Llama-3's tiktoken `tokenizer.model` (base64 token and rank per line) with its 256
special tokens appended after the BPE ranks."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path

from tempo.api.llm.tokenizer.sp_tokenizer import find_model_file
from tempo.api.llm.tokenizer.tokenizer import RuntimeTokenizer, TokenizerError, require
from tempo.core.errors import user_site

PAT_STR = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
           r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
NUM_RESERVED_SPECIAL = 256
_NAMED = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
          "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|step_id|>",
          "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>",
          "<|python_tag|>"]
SPECIAL_TOKENS = _NAMED + [f"<|reserved_special_token_{2 + i}|>"
                           for i in range(NUM_RESERVED_SPECIAL - len(_NAMED))]


def read_bpe_ranks(path: Path) -> dict[bytes, int]:
    """The `<base64 token> <rank>` lines of a tiktoken BPE file."""
    ranks: dict[bytes, int] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            ranks[base64.b64decode(parts[0], validate=True)] = int(parts[1])
        except (ValueError, IndexError) as exc:
            raise TokenizerError(f"{path}:{n} is not a tiktoken BPE line ('<base64> <rank>')",
                                 site=user_site()) from exc
    return ranks


class LlamaTiktokenTokenizer(RuntimeTokenizer):
    """Special ids follow the BPE ranks: `<|begin_of_text|>` is `len(ranks)`."""

    def __init__(self, model_path: str) -> None:
        require("tiktoken", "reading a tiktoken tokenizer.model")
        import tiktoken

        ranks = read_bpe_ranks(Path(model_path))
        base = len(ranks)
        self.special = {tok: base + i for i, tok in enumerate(SPECIAL_TOKENS)}
        self.model = tiktoken.Encoding(name=Path(model_path).name, pat_str=PAT_STR,
                                       mergeable_ranks=ranks, special_tokens=self.special)

    @staticmethod
    def from_checkpoint(checkpoint_dir: str) -> LlamaTiktokenTokenizer:
        return LlamaTiktokenTokenizer(str(find_model_file(checkpoint_dir)))

    @property
    def n_words(self) -> int:
        return int(self.model.n_vocab)

    @property
    def bos_id(self) -> int:
        return self.special["<|begin_of_text|>"]

    @property
    def eos_id(self) -> int:
        return self.special["<|end_of_text|>"]

    @property
    def pad_id(self) -> int:
        return self.special["<|finetune_right_pad_id|>"]

    @property
    def stop_tokens(self) -> list[int]:
        return [self.eos_id, self.special["<|eom_id|>"], self.special["<|eot_id|>"]]

    def encode(self, s: str, bos: bool = False, eos: bool = False) -> list[int]:
        ids = list(self.model.encode(s, disallowed_special=()))
        return ([self.bos_id] if bos else []) + ids + ([self.eos_id] if eos else [])

    def decode(self, tokens: Sequence[int]) -> str:
        return str(self.model.decode([int(t) for t in tokens]))
