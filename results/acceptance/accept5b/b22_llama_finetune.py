"""§6.5 + §6.2: fine-tuning a Llama loaded from an HF checkpoint -- Llama.from_checkpoint(...,
domain=(i,)) so its weights evolve along the training iteration i; the next-token
cross-entropy of one 8-token sequence (teacher forcing over t) summed over t; two Adam
optimizers because parameters must share one domain (API §6.2): the per-layer weights
(independent_domain = the model's layer variable) and the rest (embeddings, final norm,
output). Losses of 4 iterations vs HF LlamaForCausalLM trained by torch.optim.Adam (same lr,
one group) on the same tokens."""
import sys, os, tempfile
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

V, N, L = 32, 4, 8
_C = {}


def make():
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(7)
    hc = LlamaConfig(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                     num_key_value_heads=1, rms_norm_eps=1e-5, tie_word_embeddings=False, max_position_embeddings=32,
                     attn_implementation="eager")
    m = LlamaForCausalLM(hc)
    d = tempfile.mkdtemp(prefix="b22_")
    m.save_pretrained(d, safe_serialization=True)
    return d


def program(cfg):
    from transformers import LlamaForCausalLM
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.llm.models.llama import Llama
    from tempo.api.optim.optim import Adam
    from tempo.core.dtype import dtypes
    if "d" not in _C:
        _C["d"] = make()
    d = _C["d"]
    TOK = np.random.default_rng(0).integers(0, V, size=(L + 1,)).astype(np.int64)
    s = {}
    ctx = TempoContext(cfg, dim_names=("i", "t"))
    (i, I), (t, T) = ctx.variables_and_bounds
    with ctx:
        model = Llama.from_checkpoint(d, t, V, dtypes.float32, ctx.execution_config, domain=(i,))
        tok = RT.const(TOK[:-1]).cast(dtypes.default_int).index(0, t)
        tgt = RT.const(TOK[1:]).cast(dtypes.default_int).index(0, t)
        logits = model.forward(tok)                               # (V,) over (i, t)
        nll = -logits.log_softmax(-1).index(0, tgt)
        loss = nll[i, 0:T].mean(0)
        loss.backward()
        lay = [p for p in model.parameters if p.unindexed_domain.has_dim(model.layer)]
        rest = [p for p in model.parameters if not p.unindexed_domain.has_dim(model.layer)]
        s["n"] = (len(lay), len(rest))
        Adam(lay, [], lr=0.01, independent_domain=(model.layer,)).step()
        Adam(rest, [], lr=0.01).step()
        loss[0:I].sink_udf(grab(s, "loss"))
    ctx.compile({I: N, T: L}).execute()
    hf = LlamaForCausalLM.from_pretrained(d, attn_implementation="eager")
    hf.train()
    opt = torch.optim.Adam(hf.parameters(), lr=0.01)
    ref = []
    x = torch.tensor(TOK)[None]
    for _ in range(N):
        lo = torch.nn.functional.cross_entropy(hf(x[:, :-1]).logits[0], x[0, 1:])
        ref.append(lo.item()); opt.zero_grad(); lo.backward(); opt.step()
    return [("n_params", np.array(s["n"]), np.array((9, 3)), 0), ("loss", s["loss"], np.array(ref, np.float32), 2e-4)]


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        err = np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64))) if a.shape == b_.shape else "SHAPE"
        print(r[0], a, b_, err, "ok" if a.shape == b_.shape and err <= r[3] else "BAD")
