"""MEMSAVE.md §4/§5/§7.3 on a Hugging Face BertModel (eager attention, random weights): the
marginal saved-for-backward bytes of ONE post-LN layer (a 3-layer minus a 2-layer encoder,
hooks dedup'd by storage, parameters and the input excluded, bool-mask dropout as on GPU via
torch.native_dropout), baseline vs convert(all techniques, bit masks), against §4's closed
forms bSH(16s+2) + bAS^2(2s+1) and bSH(10s+2.5) + bAS^2(s+1/8) (up to the 4 row-statistic
vectors: |diff| <= 4*b*S*4 bytes); convert keeps outputs (eval) and gradients (dropout 0)."""
import sys, os, copy
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch

CONFIGS = ["torch:default"]


def saved(fn, exclude):
    ex = {t.untyped_storage().data_ptr() for t in exclude}
    st = {}
    def pack(t):
        s = t.untyped_storage()
        if s.data_ptr() not in ex:
            st[s.data_ptr()] = s.nbytes()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return sum(st.values()), out


def native_dropout(input, p=0.5, training=True, inplace=False):
    return torch.native_dropout(input, p, True)[0] if training and p > 0 else input


def program(cfg):
    from transformers import BertConfig, BertModel
    from tempo import memsave
    b, S, H, A, I = 2, 32, 64, 4, 256
    out = []
    per_layer = {}
    for conv in (False, True):
        sizes = {}
        for L in (2, 3):
            torch.manual_seed(0)
            m = BertModel(BertConfig(hidden_size=H, num_attention_heads=A, intermediate_size=I, num_hidden_layers=L,
                                     vocab_size=50, max_position_embeddings=64, attn_implementation="eager",
                                     hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1), add_pooling_layer=False)
            if conv:
                memsave.convert(m)
            m.train()
            emb = torch.randn(b, S, H, requires_grad=True)
            mask = torch.ones(b, S, dtype=torch.long)
            orig = torch.nn.functional.dropout
            torch.nn.functional.dropout = native_dropout
            try:
                nb, _ = saved(lambda: m.encoder(emb)[0], list(m.parameters()) + [emb])
            finally:
                torch.nn.functional.dropout = orig
            sizes[L] = nb
        per_layer[conv] = sizes[3] - sizes[2]
    s = 4
    base = b * S * H * (16 * s + 2) + b * A * S * S * (2 * s + 1)
    tempo = b * S * H * (10 * s + 2.5) + b * A * S * S * (s + 1 / 8)
    rows = 4 * b * S * 4
    out += [("baseline_bytes", np.array(per_layer[False], np.float64), np.array(base, np.float64), rows),
            ("memsave_bytes", np.array(per_layer[True], np.float64), np.array(tempo, np.float64), rows)]
    # equivalence: eval outputs and dropout-free grads
    torch.manual_seed(1)
    cfgb = BertConfig(hidden_size=H, num_attention_heads=A, intermediate_size=I, num_hidden_layers=2, vocab_size=50,
                      max_position_embeddings=64, attn_implementation="eager", hidden_dropout_prob=0.0,
                      attention_probs_dropout_prob=0.0, layer_norm_eps=1e-12)
    m0 = BertModel(cfgb, add_pooling_layer=False)
    m1 = copy.deepcopy(m0); rep = memsave.convert(m1)
    ids = torch.randint(0, 50, (b, S)); am = torch.ones(b, S, dtype=torch.long); am[1, -5:] = 0
    m0.eval(); m1.eval()
    with torch.no_grad():
        y0 = m0(ids, attention_mask=am).last_hidden_state; y1 = m1(ids, attention_mask=am).last_hidden_state
    m0.train(); m1.train()
    R = torch.randn(b, S, H)   # a random projection: square().mean() of a LayerNorm output is ~1 whatever the input
    l0 = (m0(ids, attention_mask=am).last_hidden_state * R).sum(); l0.backward()
    l1 = (m1(ids, attention_mask=am).last_hidden_state * R).sum(); l1.backward()
    g0 = dict(m0.named_parameters()); g1 = dict(m1.named_parameters())
    worst = max(float((g0[k].grad - g1[k].grad).abs().max() / (g0[k].grad.abs().max() + 1e-12)) for k in g0 if g0[k].grad is not None and g0[k].grad.abs().max() > 1e-5)  # key.bias: true grad 0 (softmax shift), noise only
    out += [("eval_out", y1, y0, 1e-5), ("grad_rel", np.array(worst), np.array(0.0), 1e-3),
            ("converted_counts", np.array([rep.count("gelu"), rep.count("layernorm"), rep.count("attention")]), np.array([2, 5, 2]), 0),
            ("eps_kept", np.array(m1.encoder.layer[0].output.LayerNorm.eps), np.array(1e-12), 0)]
    return out


if __name__ == "__main__":
    for r in program(None):
        a = np.asarray(r[1].detach() if hasattr(r[1], "detach") else r[1], np.float64)
        b_ = np.asarray(r[2].detach() if hasattr(r[2], "detach") else r[2], np.float64)
        err = np.max(np.abs(a - b_)) if a.shape == b_.shape else "SHAPE"
        print(r[0], a.ravel()[:3], b_.ravel()[:3], err, "ok" if a.shape == b_.shape and err <= r[3] else "BAD")
