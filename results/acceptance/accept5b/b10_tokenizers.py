"""§6.5 tokenizers read from a checkpoint dir by Llama.*_tokenizer_from_checkpoint and
auto_tokenizer_from_checkpoint: a sentencepiece model trained here with Llama-2's settings
(byte fallback, no whitespace folding, pad undefined) in a dir named "...Llama-2..."; a
tiktoken BPE tokenizer.model (256 bytes + a few merges) in a "...Llama-3.2..." dir. Each vs
its library used directly: encode (with bos/eos), decode, n_words, bos/eos/pad ids,
stop_tokens; left_pad_token_batch (SP: no pad id, so the token of " " pads) as a (2, L)
const read back through a sink."""
import sys, os, tempfile, base64
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
from common import grab

CONFIGS = ["torch:default", "numpy:default"]
TEXT = ["the cat sat on the mat", "then the theatre", "a dog", "hello there, the end!"]
_C = {}


def make():
    import sentencepiece as spm
    root = tempfile.mkdtemp(prefix="b10_")
    d2 = os.path.join(root, "tiny-Llama-2-7b"); os.makedirs(d2)
    corpus = os.path.join(root, "c.txt")
    with open(corpus, "w") as f:
        for k in range(200):
            f.write(" ".join(TEXT[k % 4].split()[::(1 if k % 3 else -1)]) + f" word{k % 17}\n")
    spm.SentencePieceTrainer.train(input=corpus, model_prefix=os.path.join(d2, "tokenizer"), vocab_size=320,
                                   byte_fallback=True, remove_extra_whitespaces=False, pad_id=-1,
                                   bos_id=1, eos_id=2, unk_id=0, model_type="bpe", user_defined_symbols=["\u2581\u2581"])
    d3 = os.path.join(root, "tiny-Llama-3.2-1B"); os.makedirs(d3)
    ranks = [bytes([b]) for b in range(256)] + [b"th", b"the", b" the", b"at", b"he", b" c"]
    with open(os.path.join(d3, "tokenizer.model"), "w") as f:
        for r, tok in enumerate(ranks):
            f.write(f"{base64.b64encode(tok).decode()} {r}\n")
    return d2, d3, ranks


def program(cfg):
    import sentencepiece as spm, tiktoken
    from tempo.api import TempoContext
    from tempo.api.llm.models.llama import Llama
    if "d" not in _C:
        _C["d"] = make()
    d2, d3, ranks = _C["d"]
    out = []
    sp = spm.SentencePieceProcessor(model_file=os.path.join(d2, "tokenizer.model"))
    from tempo.api.llm.tokenizer.llama_tiktoken_tokenizer import PAT_STR, SPECIAL_TOKENS
    enc = tiktoken.Encoding("ref", pat_str=PAT_STR, mergeable_ranks={t: r for r, t in enumerate(ranks)},
                            special_tokens={t: len(ranks) + k for k, t in enumerate(SPECIAL_TOKENS)})
    s = {}
    ctx = TempoContext(cfg, num_dims=0)
    with ctx:
        for tag, tk in [("sp", Llama.sp_tokenizer_from_checkpoint(d2)), ("sp_auto", Llama.auto_tokenizer_from_checkpoint(d2)),
                        ("tt", Llama.tiktoken_tokenizer_from_checkpoint(d3)), ("tt_auto", Llama.auto_tokenizer_from_checkpoint(d3))]:
            is_sp = tag.startswith("sp")
            for k, txt in enumerate(TEXT):
                got = tk.encode(txt, bos=True, eos=k % 2 == 0)
                base = list(sp.encode(txt)) if is_sp else list(enc.encode(txt))
                bos, eos = (sp.bos_id(), sp.eos_id()) if is_sp else (len(ranks), len(ranks) + 1)
                want = [bos] + base + ([eos] if k % 2 == 0 else [])
                out.append((f"{tag}_enc{k}", np.array(got), np.array(want), 0))
                out.append((f"{tag}_dec{k}", np.array(tk.decode(base)), np.array(sp.decode(base) if is_sp else enc.decode(base)), 0))
            n = sp.vocab_size() if is_sp else len(ranks) + 256
            out.append((f"{tag}_ids", np.array([tk.n_words, tk.vocab_size, tk.bos_id, tk.eos_id]),
                        np.array([n, n, bos, eos]), 0))
            if not is_sp:
                out.append((f"{tag}_stops", np.array(tk.stop_tokens),
                            np.array([len(ranks) + 1, len(ranks) + SPECIAL_TOKENS.index("<|eom_id|>"), len(ranks) + SPECIAL_TOKENS.index("<|eot_id|>")]), 0))
            lists = [tk.encode(TEXT[0], bos=True), tk.encode(TEXT[2], bos=True)]
            tk.left_pad_token_batch(lists, 64).sink_udf(grab(s, tag))
            pad = (sp.encode(" ")[0] if len(sp.encode(" ")) == 1 else -99) if is_sp else len(ranks) + SPECIAL_TOKENS.index("<|finetune_right_pad_id|>")
            L = max(map(len, lists))
            s[tag + "_want"] = np.array([[pad] * (L - len(x)) + x for x in lists])
    ctx.compile({}).execute()
    for tag in ["sp", "sp_auto", "tt", "tt_auto"]:
        out.append((tag + "_pad", s[tag], s[tag + "_want"].astype(s[tag].dtype), 0))
    return out


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        ok = a.shape == b_.shape and np.array_equal(a, b_)
        print(r[0], "ok" if ok else ("BAD", a, b_))
