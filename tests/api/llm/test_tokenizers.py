"""Tokenizers from local files: tokenizer.json (tokenizers), a tiktoken BPE file and a
sentencepiece model trained here; left padding; clear errors for missing files/packages."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from tempo.api.llm.models.llama import Llama
from tempo.api.llm.tiny_checkpoint import train_tokenizer
from tempo.api.llm.tiny_corpus import CORPUS
from tempo.api.llm.tokenizer.hf_tokenizer import HFTokenizer
from tempo.api.llm.tokenizer.llama_tiktoken_tokenizer import LlamaTiktokenTokenizer
from tempo.api.llm.tokenizer.sp_tokenizer import SPTokenizer
from tempo.core.errors import TempoError

TEXT = "The river sang to the stones, and 42 fish listened!"


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("tok")
    train_tokenizer(d)
    return d


def test_hf_and_tiktoken_files_agree(tok_dir: Path) -> None:
    hf = Llama.auto_tokenizer_from_checkpoint(str(tok_dir))
    tk = Llama.tiktoken_tokenizer_from_checkpoint(str(tok_dir))
    assert isinstance(hf, HFTokenizer) and isinstance(tk, LlamaTiktokenTokenizer)
    assert hf.n_words == tk.n_words == 512 + 256
    assert (hf.bos_id, hf.eos_id) == (tk.bos_id, tk.eos_id) == (512, 513)
    assert tk.stop_tokens == [513, 512 + 8, 512 + 9]
    for t in (hf, tk):
        ids = t.encode(TEXT, bos=True, eos=True)
        assert ids[0] == t.bos_id and ids[-1] == t.eos_id and len(ids) < len(TEXT)
        assert t.decode(ids[1:-1]) == TEXT
    # same byte-level BPE merges: identical ids on words both pre-tokenisers split alike
    assert hf.encode("the river") == tk.encode("the river")


def test_sentencepiece_tokenizer(tmp_path: Path) -> None:
    import sentencepiece as spm

    (tmp_path / "corpus.txt").write_text(CORPUS)
    spm.SentencePieceTrainer.train(input=str(tmp_path / "corpus.txt"),
                                   model_prefix=str(tmp_path / "tokenizer"), vocab_size=150,
                                   pad_id=3, minloglevel=2)
    tok = Llama.sp_tokenizer_from_checkpoint(str(tmp_path))
    assert isinstance(tok, SPTokenizer)
    assert tok.n_words == 150 and (tok.bos_id, tok.eos_id, tok.pad_id) == (1, 2, 3)
    ids = tok.encode("the river sang", bos=True)
    assert ids[0] == 1 and tok.decode(ids[1:]) == "the river sang"
    # auto: a protobuf tokenizer.model without tokenizer.json is sentencepiece
    assert isinstance(Llama.auto_tokenizer_from_checkpoint(str(tmp_path)), SPTokenizer)


def test_left_pad_token_batch(tok_dir: Path) -> None:
    from tempo.api import RecurrentTensor as RT
    from tempo.api import TempoContext
    from tempo.core.dtype import dtypes

    tk = Llama.tiktoken_tokenizer_from_checkpoint(str(tok_dir))
    lists = [tk.encode("the river"), tk.encode("once upon a time there was")]
    ctx = TempoContext(num_dims=0)
    with ctx:
        batch = tk.left_pad_token_batch(lists, 16)
        out: list = []
        RT.lift(batch).sink_udf(lambda x: out.append(x))
    ctx.compile({}).execute()
    n = max(len(x) for x in lists)
    want = np.full((2, n), tk.pad_id)
    for b, ids in enumerate(lists):
        want[b, n - len(ids):] = ids
    assert batch.dtype == dtypes.default_int and tuple(batch.shape) == (2, n)
    np.testing.assert_array_equal(np.asarray(out[0]), want)
    with pytest.raises(TempoError, match="more than max_prompt_len"):
        tk.left_pad_token_batch(lists, 2)


def test_missing_files_and_packages_raise_tempo_errors(tmp_path: Path, tok_dir: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TempoError, match="no tokenizer.model"):
        Llama.sp_tokenizer_from_checkpoint(str(tmp_path))
    with pytest.raises(TempoError, match="no tokenizer.json or tokenizer.model"):
        Llama.auto_tokenizer_from_checkpoint(str(tmp_path))
    real = importlib.util.find_spec

    def hide(name: str, *a: object) -> object:
        return None if name in ("tiktoken", "sentencepiece") else real(name, *a)

    monkeypatch.setattr(importlib.util, "find_spec", hide)
    with pytest.raises(TempoError, match="needs the 'tiktoken' package"):
        Llama.tiktoken_tokenizer_from_checkpoint(str(tok_dir))
    (tmp_path / "tokenizer.model").write_bytes(b"\x0a\x00")
    with pytest.raises(TempoError, match="needs the 'sentencepiece' package"):
        Llama.sp_tokenizer_from_checkpoint(str(tmp_path))
