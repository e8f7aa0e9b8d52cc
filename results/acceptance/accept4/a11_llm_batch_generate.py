"""§6.5 LLM: a tiny HF LlamaForCausalLM (GQA, untied) saved in Meta's layout (params.json +
consolidated.00.pth, q/k un-permuted), a word-level tokenizer.json from the `tokenizers`
library read by Llama.auto_tokenizer_from_checkpoint; two prompts of different lengths
left-padded with left_pad_token_batch; greedy generation over (b, t) where logits read the
whole prefix (KV cache) vs HF's generate(use_cache=True) on the same padded ids with an
all-ones attention mask; per-position logits vs HF forward; tokenizer encode/decode roundtrip."""
import sys, os, json, tempfile
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

WORDS = ["<pad>", "<s>", "</s>", "<unk>"] + [f"w{k}" for k in range(60)]

def make_ckpt(d):
    from transformers import LlamaConfig, LlamaForCausalLM
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders
    torch.manual_seed(0)
    hc = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
                     max_position_embeddings=64, attn_implementation="eager")
    m = LlamaForCausalLM(hc).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(3.0)   # sharper logits: fewer near-ties in greedy decoding
    def unperm(w, nh):
        o, i = w.shape
        return w.view(nh, 2, o // nh // 2, i).transpose(1, 2).reshape(o, i)
    sd = {"tok_embeddings.weight": m.model.embed_tokens.weight, "norm.weight": m.model.norm.weight, "output.weight": m.lm_head.weight}
    for l, layer in enumerate(m.model.layers):
        a = layer.self_attn
        sd[f"layers.{l}.attention.wq.weight"] = unperm(a.q_proj.weight, 4)
        sd[f"layers.{l}.attention.wk.weight"] = unperm(a.k_proj.weight, 2)
        sd[f"layers.{l}.attention.wv.weight"] = a.v_proj.weight
        sd[f"layers.{l}.attention.wo.weight"] = a.o_proj.weight
        sd[f"layers.{l}.feed_forward.w1.weight"] = layer.mlp.gate_proj.weight
        sd[f"layers.{l}.feed_forward.w2.weight"] = layer.mlp.down_proj.weight
        sd[f"layers.{l}.feed_forward.w3.weight"] = layer.mlp.up_proj.weight
        sd[f"layers.{l}.attention_norm.weight"] = layer.input_layernorm.weight
        sd[f"layers.{l}.ffn_norm.weight"] = layer.post_attention_layernorm.weight
    torch.save({k: v.detach().clone() for k, v in sd.items()}, os.path.join(d, "consolidated.00.pth"))
    # Meta: hidden = multiple_of * ceil(int(2*4*dim/3) * ffn_mult / multiple_of): 2*4*32/3=85 -> 96 with multiple_of=32
    json.dump({"dim": 32, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "vocab_size": 64, "multiple_of": 32,
               "norm_eps": 1e-5, "rope_theta": 10000.0, "use_scaled_rope": False}, open(os.path.join(d, "params.json"), "w"))
    tk = Tokenizer(models.WordLevel({w: k for k, w in enumerate(WORDS)}, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tk.decoder = decoders.WordPiece(prefix="##")
    tk.save(os.path.join(d, "tokenizer.json"))
    json.dump({"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>"}, open(os.path.join(d, "tokenizer_config.json"), "w"))
    return m

_CACHE = {}

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.llm.models.llama import Llama
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    if "d" not in _CACHE:
        d = tempfile.mkdtemp(prefix="a11_")
        _CACHE["d"], _CACHE["m"] = d, make_ckpt(d)
    d, hf = _CACHE["d"], _CACHE["m"]
    G = 5
    ctx = TempoContext(cfg, dim_names=("b", "t"))
    (b, B), (t, T) = ctx.variables_and_bounds
    s = {}
    with ctx:
        tok = Llama.auto_tokenizer_from_checkpoint(d)
        prompts = [tok.encode("w5 w17 w3 w40 w8", bos=True), tok.encode("w9 w2", bos=True)]
        roundtrip = tok.decode(prompts[0][1:])
        batch = tok.left_pad_token_batch(prompts, 16)
        P = int(batch.shape.int_at(1))
        model = Llama.from_checkpoint(d, t, tok.n_words, dtypes.float32, ctx.execution_config)
        ids = RT.placeholder((), dtypes.default_int, domain=(b, t))
        ids[t < P] = batch.index(0, b).index(0, ie.min(t, P - 1))
        logits = model.forward(ids)
        ids[True] = Llama.sample(logits[b, t - 1], greedy=True).cast(dtypes.default_int)
        ids[0:B, 0:T].sink_udf(grab(s, "ids"))
        logits[0:B, 0:T].sink_udf(grab(s, "logits"))
    ctx.compile({B: 2, T: P + G}).execute()
    padded = torch.tensor([[0] * (P - len(p)) + p for p in prompts])
    with torch.no_grad():
        gen = hf.generate(padded, attention_mask=torch.ones_like(padded), max_new_tokens=G, do_sample=False,
                          use_cache=True, pad_token_id=0, eos_token_id=None)
        full = hf(gen[:, :P + G], attention_mask=torch.ones_like(gen[:, :P + G])).logits
    return [("roundtrip", np.array(roundtrip), np.array("w5 w17 w3 w40 w8"), 0),
            ("pad_batch", np.array(P), np.array(6), 0),
            ("ids", s["ids"], gen[:, :P + G].numpy().astype(s["ids"].dtype), 0),
            ("logits", s["logits"], full.numpy(), 2e-3 * float(full.abs().max()))]
