"""MEMSAVE.md §5/§7.2 item 5 on GPT-2 (accept5b tested BERT bytes and the drop-in layers):
tempo.memsave.convert on an HF GPT2LMHeadModel (gelu_new = tanh GELU, LayerNorm, GPT2Attention)
must (a) report gelu/layernorm/attention conversions, (b) leave eval logits equal, (c) give the
same loss and gradients on a training step (dropout off), (d) track the unconverted model
over 4 AdamW steps (losses and final weights), and (e) save fewer bytes for backward
(saved_tensors_hooks, dedup by storage) than the unconverted model, (f) fp64 gradcheck-style
agreement of the converted block's input gradient with the stock one. torch only."""
import sys, os, copy
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch

CONFIGS = ["torch:default"]


def saved_bytes(model, ids):
    seen = {}
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in params:
            seen[st.data_ptr()] = st.nbytes()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model(ids, labels=ids).loss
    loss.backward()
    return sum(seen.values())


def program(cfg):
    from transformers import GPT2Config, GPT2LMHeadModel
    import tempo.memsave as ms
    torch.manual_seed(0)
    hc = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=4, resid_pdrop=0.0,
                    embd_pdrop=0.0, attn_pdrop=0.0, activation_function="gelu_new", attn_implementation="eager")
    base = GPT2LMHeadModel(hc)
    conv = copy.deepcopy(base)
    rep = ms.convert(conv)
    counts = np.array([rep.count("gelu"), rep.count("layernorm"), rep.count("attention")])
    ids = torch.randint(0, 64, (2, 16), generator=torch.Generator().manual_seed(1))
    base.eval(); conv.eval()
    with torch.no_grad():
        lb, lc = base(ids).logits, conv(ids).logits
    base.train(); conv.train()
    out = [("converted_counts", counts, np.array([2, 5, 2]), 0), ("eval_logits", lc, lb, 1e-5)]
    lossb = base(ids, labels=ids).loss; lossb.backward()
    lossc = conv(ids, labels=ids).loss; lossc.backward()
    out.append(("loss", lossc.detach(), lossb.detach(), 1e-6))
    gb = dict(base.named_parameters()); gc = dict(conv.named_parameters())
    worst = max(float((gc[k].grad - gb[k].grad).abs().max() / (gb[k].grad.abs().max() + 1e-12)) for k in gb)
    out.append(("grad_rel_err", np.array(worst < 1e-4), np.array(True), 0))
    base.zero_grad(); conv.zero_grad()
    ob = torch.optim.AdamW(base.parameters(), lr=1e-2); oc = torch.optim.AdamW(conv.parameters(), lr=1e-2)
    lb_, lc_ = [], []
    for k in range(4):
        x = torch.randint(0, 64, (2, 16), generator=torch.Generator().manual_seed(10 + k))
        for m, o, acc in ((base, ob, lb_), (conv, oc, lc_)):
            o.zero_grad(); L = m(x, labels=x).loss; L.backward(); o.step(); acc.append(L.item())
    out.append(("train_losses", np.array(lc_), np.array(lb_), 1e-4))
    wdiff = max(float((gc[k] - gb[k]).abs().max()) for k in gb)
    out.append(("weights_after_4_steps", np.array(wdiff < 1e-4), np.array(True), 0))
    b0, b1 = saved_bytes(base, ids), saved_bytes(conv, ids)
    out.append(("saves_fewer_bytes", np.array(b1 < b0), np.array(True), 0))
    # fp64: one converted block vs the stock one, input gradient
    blk_b = copy.deepcopy(base.transformer.h[0]).double(); blk_c = copy.deepcopy(blk_b); ms.convert(blk_c)
    xb = torch.randn(2, 8, 32, dtype=torch.float64, requires_grad=True); xc = xb.detach().clone().requires_grad_()
    yb = blk_b(xb)[0]; yc = blk_c(xc)[0]
    g = torch.randn_like(yb)
    (yb * g).sum().backward(); (yc * g).sum().backward()
    out.append(("fp64_block_out", yc.detach(), yb.detach(), 1e-10))
    out.append(("fp64_block_dx", xc.grad, xb.grad, 1e-8))
    return out
