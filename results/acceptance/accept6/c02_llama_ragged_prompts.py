"""§6.5 generation with the batch as a DOMAIN dim b and ragged prompts: row b's prompt has
its own length plen[b] (2, 5, 3), fed while t < plen[b] (a data-dependent where over the
from_symbol(t) < plen.index(0, b) comparison, not an index condition), then greedy tokens of
Llama.sample(greedy=True) at t - 1. Reference: HF generate per row on the unpadded prompt
(max_new_tokens = T - plen[b]), and HF forward logits of the final sequences at every
position (the model's KV cache over t must only see the row's own tokens)."""
import sys, os, tempfile
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

V, N = 48, 10
PLEN = np.array([2, 5, 3])
_C = {}


def make():
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(11)
    hc = LlamaConfig(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=4, rms_norm_eps=1e-5, tie_word_embeddings=True, max_position_embeddings=64,
                     attn_implementation="eager")
    m = LlamaForCausalLM(hc).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(3.0)
    d = tempfile.mkdtemp(prefix="c02_")
    m.save_pretrained(d, safe_serialization=True)
    rng = np.random.default_rng(4)
    PR = rng.integers(1, V, size=(3, 5)).astype(np.int64)
    seqs, logits = [], []
    with torch.no_grad():
        for r in range(3):
            p = torch.tensor(PR[r, :PLEN[r]])[None]
            g = m.generate(p, attention_mask=torch.ones_like(p), max_new_tokens=int(N - PLEN[r]), do_sample=False,
                           pad_token_id=0, eos_token_id=None)[0]
            seqs.append(g.numpy())
            logits.append(m(g[None]).logits[0].numpy())
    return d, PR, np.stack(seqs), np.stack(logits)


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.llm.models.llama import Llama
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    if "d" not in _C:
        _C["d"], _C["pr"], _C["seqs"], _C["lg"] = make()
    d, PR, SEQ, LG = _C["d"], _C["pr"], _C["seqs"], _C["lg"]
    s = {}
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    with ctx:
        model = Llama.from_checkpoint(d, t, V, dtypes.float32, ctx.execution_config)
        prompt = RT.const(PR).cast(dtypes.default_int).index(0, b)
        plen = RT.const(PLEN).cast(dtypes.default_int).index(0, b)
        tok = RT.placeholder((), dtypes.default_int, domain=(b, t))
        tok[b, 0] = prompt.index(0, 0)
        lg = model.forward(tok)
        nxt = Llama.sample(lg, greedy=True).cast(dtypes.default_int)
        feeding = RT.from_symbol(t) < plen
        tok[True] = feeding.where(prompt.index(0, ie.min(t, 4)), nxt[b, t - 1])
        tok[0:B, 0:T].sink_udf(grab(s, "tok"))
        lg[0:B, 0:T].sink_udf(grab(s, "lg"))
    ctx.compile({B: 3, T: N}).execute()
    return [("tokens", s["tok"].astype(np.int64), SEQ, 0), ("logits", s["lg"], LG, 2e-4)]
