"""§6.5 + §7.10 with the batch as a DOMAIN dim: greedy generation over (b, t) where each row
stops at its own stop token, {T: (P + MAXN, done)} with done over (b, t) (so each b has its
own T): the tokens of row b are tok[b, 0:T] (a slice to the row's own dynamic bound, sunk
per b), and its mean log-probability of the generated tokens is x[b, P:T].mean()-style
(sum over 0:T of a masked per-token value divided by the row's T - P). Reference: HF
generate per row with eos_token_id (stops after emitting it), and HF log-softmax of the
final sequences."""
import sys, os, tempfile
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab_list

V, P, MAXN = 40, 3, 7
_C = {}


def make():
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(8)
    hc = LlamaConfig(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, rms_norm_eps=1e-5, tie_word_embeddings=False, max_position_embeddings=64,
                     attn_implementation="eager")
    m = LlamaForCausalLM(hc).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(3.0)
    d = tempfile.mkdtemp(prefix="c08_")
    m.save_pretrained(d, safe_serialization=True)
    rng = np.random.default_rng(6)
    PR = rng.integers(0, V, size=(3, P)).astype(np.int64)
    with torch.no_grad():
        free = m.generate(torch.tensor(PR), attention_mask=torch.ones(3, P, dtype=torch.long), max_new_tokens=MAXN,
                          do_sample=False, pad_token_id=0, eos_token_id=None).numpy()
    # a stop token per row: row 0 stops at its 2nd new token, row 1 at its 5th, row 2 never
    new = free[:, P:]
    stop = int(new[0, 1])
    if stop in new[1, :4] or stop in new[2] or stop in new[0, :1]:
        stop = int(new[1, 4])
    seqs, lps = [], []
    with torch.no_grad():
        for r in range(3):
            g = m.generate(torch.tensor(PR[r:r + 1]), attention_mask=torch.ones(1, P, dtype=torch.long),
                           max_new_tokens=MAXN, do_sample=False, pad_token_id=0, eos_token_id=stop)[0].numpy()
            seqs.append(g)
            lp = torch.log_softmax(m(torch.tensor(g)[None]).logits[0], -1).numpy()
            lps.append(np.mean([lp[k - 1, g[k]] for k in range(P, len(g))]))
    return d, PR, stop, seqs, np.array(lps, np.float32)


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.llm.models.llama import Llama
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    if "d" not in _C:
        _C["v"] = make()
    d, PR, stop, seqs, lps = _C["v"]
    s = {}
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    with ctx:
        model = Llama.from_checkpoint(d, t, V, dtypes.float32, ctx.execution_config)
        tok = RT.placeholder((), dtypes.default_int, domain=(b, t))
        tok[t < P] = RT.const(PR).cast(dtypes.default_int).index(0, b).index(0, ie.min(t, P - 1))
        logits = model.forward(tok)
        tok[True] = Llama.sample(logits, greedy=True).cast(dtypes.default_int)[b, t - 1]
        done = (tok == stop) & (RT.from_symbol(t) >= P)
        logp = logits.softmax(-1).ln()
        # log-prob the model gave the token at t (from position t - 1), 0 in the prompt
        lp_tok = (RT.from_symbol(t) >= P).where(logp[b, ie.max(t - 1, 0)].index(0, tok), 0.0)
        mean_lp = lp_tok[b, 0:T].sum() / (RT.from_symbol(T) - P).cast(dtypes.float32)
        tok[b, 0:T].sink_udf(grab_list(s, "rows"))
        mean_lp.sink_udf(grab_list(s, "lp"))
    ctx.compile({B: 3, T: (P + MAXN, done)}).execute()
    out = [(f"row{r}_len", np.array(len(s["rows"][r])), np.array(len(seqs[r])), 0) for r in range(3)]
    out += [(f"row{r}_tokens", np.asarray(s["rows"][r]).astype(np.int64), seqs[r], 0) for r in range(3)
            if len(s["rows"][r]) == len(seqs[r])]
    out.append(("mean_logprob", np.array(s["lp"]).reshape(-1), lps, 1e-4))
    return out
