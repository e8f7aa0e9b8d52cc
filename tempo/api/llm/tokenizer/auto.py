"""Pick the tokenizer a checkpoint ships: Llama-2 -> sentencepiece, Llama-3.x -> tiktoken
(by the path, as the original), else `tokenizer.json`, else by the `tokenizer.model` bytes."""

from __future__ import annotations

from pathlib import Path

from tempo.api.llm.tokenizer.hf_tokenizer import HFTokenizer
from tempo.api.llm.tokenizer.llama_tiktoken_tokenizer import LlamaTiktokenTokenizer
from tempo.api.llm.tokenizer.sp_tokenizer import SPTokenizer, find_model_file
from tempo.api.llm.tokenizer.tokenizer import RuntimeTokenizer, TokenizerError
from tempo.core.errors import user_site


def auto_tokenizer(checkpoint_dir: str) -> RuntimeTokenizer:
    name = str(checkpoint_dir).lower().replace("_", "-")
    if "llama-2" in name:
        return SPTokenizer.from_checkpoint(checkpoint_dir)
    if any(k in name for k in ("llama3", "llama-3")) and _has_model_file(checkpoint_dir):
        return LlamaTiktokenTokenizer.from_checkpoint(checkpoint_dir)
    if (Path(checkpoint_dir) / "tokenizer.json").exists():
        return HFTokenizer.from_checkpoint(checkpoint_dir)
    if not _has_model_file(checkpoint_dir):
        raise TokenizerError(f"no tokenizer.json or tokenizer.model in {checkpoint_dir!r}",
                             site=user_site())
    head = find_model_file(checkpoint_dir).read_bytes()[:256]
    try:  # tiktoken files are ASCII "<base64> <rank>" lines; sentencepiece is protobuf
        head.decode("ascii").split()[1]
    except (UnicodeDecodeError, IndexError):
        return SPTokenizer.from_checkpoint(checkpoint_dir)
    return LlamaTiktokenTokenizer.from_checkpoint(checkpoint_dir)


def _has_model_file(checkpoint_dir: str) -> bool:
    return any((d / "tokenizer.model").exists()
               for d in (Path(checkpoint_dir), Path(checkpoint_dir) / "original"))
