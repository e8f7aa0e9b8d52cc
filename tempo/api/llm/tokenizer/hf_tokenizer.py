"""A Hugging Face `tokenizer.json` through the `tokenizers` library (no `transformers`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tempo.api.llm.tokenizer.tokenizer import RuntimeTokenizer, TokenizerError, require
from tempo.core.errors import user_site

_BOS = ("<|begin_of_text|>", "<s>", "<bos>")
_EOS = ("<|end_of_text|>", "</s>", "<eos>")
_STOP = ("<|eot_id|>", "<|eom_id|>")
_PAD = ("<|finetune_right_pad_id|>", "<pad>")


def _token_text(v: Any) -> str | None:
    return v.get("content") if isinstance(v, dict) else v


class HFTokenizer(RuntimeTokenizer):
    """bos/eos from `tokenizer_config.json` when present, else Llama's special names."""

    def __init__(self, path: str) -> None:
        require("tokenizers", "reading tokenizer.json")
        from tokenizers import Tokenizer

        p = Path(path)
        self.tok = Tokenizer.from_file(str(p))
        conf_path = p.with_name("tokenizer_config.json")
        conf = json.loads(conf_path.read_text()) if conf_path.exists() else {}
        self._bos = self._find(_token_text(conf.get("bos_token")), _BOS)
        self._eos = self._find(_token_text(conf.get("eos_token")), _EOS)
        if self._bos is None or self._eos is None:
            raise TokenizerError(f"{p}: no BOS/EOS token (looked for tokenizer_config.json and "
                                 f"{_BOS + _EOS})", site=user_site())
        self._pad = self._find(_token_text(conf.get("pad_token")), _PAD)
        stops = [self.tok.token_to_id(s) for s in _STOP]
        gen = p.with_name("generation_config.json")
        extra = json.loads(gen.read_text()).get("eos_token_id", []) if gen.exists() else []
        ids = [self._eos, *(s for s in stops if s is not None),
               *(extra if isinstance(extra, list) else [extra])]
        self._stops = list(dict.fromkeys(int(i) for i in ids))

    def _find(self, configured: str | None, names: Sequence[str]) -> int | None:
        for n in ((configured,) if configured else ()) + tuple(names):
            i = self.tok.token_to_id(n)
            if i is not None:
                return int(i)
        return None

    @staticmethod
    def from_checkpoint(checkpoint_dir: str) -> HFTokenizer:
        p = Path(checkpoint_dir) / "tokenizer.json"
        if not p.exists():
            raise TokenizerError(f"no tokenizer.json in {checkpoint_dir!r}", site=user_site())
        return HFTokenizer(str(p))

    @property
    def n_words(self) -> int:
        return int(self.tok.get_vocab_size(with_added_tokens=True))

    @property
    def bos_id(self) -> int:
        assert self._bos is not None  # checked in __init__
        return self._bos

    @property
    def eos_id(self) -> int:
        assert self._eos is not None  # checked in __init__
        return self._eos

    @property
    def pad_id(self) -> int:
        return -1 if self._pad is None else self._pad

    @property
    def stop_tokens(self) -> list[int]:
        return list(self._stops)

    def encode(self, s: str, bos: bool = False, eos: bool = False) -> list[int]:
        ids = list(self.tok.encode(s, add_special_tokens=False).ids)
        return ([self.bos_id] if bos else []) + ids + ([self.eos_id] if eos else [])

    def decode(self, tokens: Sequence[int]) -> str:
        return str(self.tok.decode([int(t) for t in tokens], skip_special_tokens=False))
