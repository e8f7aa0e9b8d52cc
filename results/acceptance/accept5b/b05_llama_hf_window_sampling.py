"""§6.5 Llama from a Hugging Face checkpoint (config.json + model.safetensors written by
save_pretrained) with settings accept2-4 did not use: tied embeddings, MQA (1 KV head),
intermediate_size 72 (not Meta's rounding of 4*dim), rms_norm_eps 1e-6, rope_theta 5e5.
(a) teacher-forced logits over (b, t) for two token rows vs HF forward; (b) the same with a
sliding-window attention_pattern `max(0, t-2):t+1` vs HF forward with the equivalent 4-D
additive mask; (c) generation over (b, t) with Llama.sample(temperature=0.7, top_p=1e-6)
(the nucleus keeps only the top token, so it must equal greedy) vs HF greedy generate."""
import sys, os, tempfile
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

V, P, G = 50, 4, 5
_C = {}


def make():
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(1)
    hc = LlamaConfig(vocab_size=V, hidden_size=32, intermediate_size=72, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=1, rms_norm_eps=1e-6, rope_theta=500000.0, tie_word_embeddings=True,
                     max_position_embeddings=64, attn_implementation="eager")
    m = LlamaForCausalLM(hc).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(3.0)
    d = tempfile.mkdtemp(prefix="b05_")
    m.save_pretrained(d, safe_serialization=True)
    return d, m


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.llm.models.llama import Llama
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    if "d" not in _C:
        _C["d"], _C["m"] = make()
    d, hf = _C["d"], _C["m"]
    rng = np.random.default_rng(0)
    TOK = rng.integers(0, V, size=(2, 9)).astype(np.int64)
    PROMPT = rng.integers(0, V, size=(2, P)).astype(np.int64)
    s = {}
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    with ctx:
        model = Llama.from_checkpoint(d, t, V, dtypes.float32, ctx.execution_config)
        tok = RT.const(TOK).index(0, b).index(0, t).cast(dtypes.default_int)
        model.forward(tok)[0:B, 0:T].sink_udf(grab(s, "full"))
        model.forward(tok, attention_pattern=ie.slice_(ie.max(0, t - 2), t + 1))[0:B, 0:T].sink_udf(grab(s, "win"))
    ctx.compile({B: 2, T: 9}).execute()
    ctx2 = TempoContext(cfg, dim_names=("b", "t"))
    (b2, B2), (t2, T2) = ctx2.variables_and_bounds
    with ctx2:
        model2 = Llama.from_checkpoint(d, t2, V, dtypes.float32, ctx2.execution_config)
        ids = RT.placeholder((), dtypes.default_int, domain=(b2, t2))
        ids[t2 < P] = RT.const(PROMPT).cast(dtypes.default_int).index(0, b2).index(0, ie.min(t2, P - 1))
        lg = model2.forward(ids)
        ids[True] = Llama.sample(lg[b2, t2 - 1], temperature=0.7, top_p=1e-6).cast(dtypes.default_int)
        ids[0:B2, 0:T2].sink_udf(grab(s, "gen"))
    ctx2.compile({B2: 2, T2: P + G}).execute()
    tt = torch.tensor(TOK)
    with torch.no_grad():
        full = hf(tt).logits.numpy()
        n = tt.shape[1]
        q = torch.arange(n)[:, None]; k = torch.arange(n)[None, :]
        vis = (k <= q) & (k >= q - 2)
        mask = torch.where(vis, 0.0, torch.finfo(torch.float32).min)[None, None].expand(2, 1, n, n)
        win = hf(tt, attention_mask=mask).logits.numpy()
        gen = hf.generate(torch.tensor(PROMPT), attention_mask=torch.ones(2, P, dtype=torch.long), max_new_tokens=G,
                          do_sample=False, pad_token_id=0, eos_token_id=None).numpy()
    sc = float(np.abs(full).max())
    return [("full", s["full"], full, 2e-4 * sc), ("win", s["win"], win, 2e-4 * sc),
            ("win_differs", np.array(np.abs(full - win).max() > 1e-2), np.array(True), 0),
            ("gen", s["gen"], gen.astype(s["gen"].dtype), 0)]


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        ok = a.shape == b_.shape and np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64))) <= r[3]
        print(r[0], a.shape, b_.shape, "ok" if ok else ("BAD", np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64))) if a.shape == b_.shape else "", a.ravel()[:8], b_.ravel()[:8]))
