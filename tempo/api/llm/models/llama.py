"""Llama (2/3/3.2) over recurrent tensors with the **layer as a dimension** (API §6.5).

One `TransformerBlock` holds every layer's weights as tensors over a layer variable `l`
(`ctx.new_perm_var(n_layers)`); the residual stream is a placeholder over `(…, t, l)` defined
at `l = 0` by the token embedding and at `l + 1` by the block's output at `l`. The program
therefore has the size of one layer whatever the depth, which keeps compile time flat.

Weights use Meta's names and layout (`layers.<l>.attention.wq.weight`, RoPE on interleaved
pairs); Hugging Face checkpoints are converted on load (`tempo.api.llm.checkpoint`).
A point of `tokens` may carry leading spatial dims (a batch `(B,)`); each is one sequence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tempo.api.nn.init import InitFn
from tempo.api.nn.linear import Embedding, Linear
from tempo.api.nn.module import Module
from tempo.api.nn.norm import RMSNorm
from tempo.api.nn.rope import RopeScalingParams, RotaryPositionalEmbeddings
from tempo.api.nn.state_loader import StateDictLoader
from tempo.core import index_expr as ie
from tempo.core import naming
from tempo.core.domain import Domain, DomainLike
from tempo.core.dtype import DataTypeLike, dtypes
from tempo.core.errors import DTypeError, ShapeError, TempoError, user_site

if TYPE_CHECKING:
    from tempo.api.llm.tokenizer.tokenizer import RuntimeTokenizer
    from tempo.api.recurrent_tensor import RecurrentTensor


@dataclass
class LlamaArgs:
    """Meta's `ModelArgs` (params.json) plus the rope scaling and tying Tempo needs."""

    dim: int = 4096
    multiple_of: int = 256
    n_heads: int = 32
    n_kv_heads: int | None = None
    n_layers: int = 32
    norm_eps: float = 1e-5
    ffn_dim_multiplier: float | None = None
    rope_theta: float = 10000.0
    use_scaled_rope: bool = False
    vocab_size: int = -1
    tie_embeddings_and_output: bool = True
    rope_scaling_params: RopeScalingParams | None = None

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads or self.n_heads

    @property
    def hidden_dim(self) -> int:
        """Meta's FeedForward width from `4*dim`, `ffn_dim_multiplier` and `multiple_of`."""
        return ffn_hidden_dim(4 * self.dim, self.multiple_of, self.ffn_dim_multiplier)

    @property
    def rope_scaling(self) -> RopeScalingParams | None:
        if not self.use_scaled_rope:
            return None
        return self.rope_scaling_params or RopeScalingParams()


@dataclass(frozen=True)
class PrefixCache:
    """Keys/values `(*lead, P, kv, hd)` of a prefilled prompt, over the layer dimension."""

    keys: RecurrentTensor
    values: RecurrentTensor
    length: int


def ffn_hidden_dim(hidden_dim: int, multiple_of: int, ffn_dim_multiplier: float | None) -> int:
    h = int(2 * hidden_dim / 3)
    if ffn_dim_multiplier is not None:
        h = int(ffn_dim_multiplier * h)
    return multiple_of * ((h + multiple_of - 1) // multiple_of)


def _loader_init(loader: StateDictLoader | None, key: str, default: InitFn,
                 per_layer: Domain) -> InitFn:
    """The checkpoint tensor when a loader has it; else `default` drawn per layer point."""
    fn = loader.load_tensor(key) if loader is not None else None
    if fn is not None:
        return fn
    if loader is not None and loader.state_dict:
        raise TempoError(f"the checkpoint has no tensor {loader.key_template(key)!r}",
                         site=user_site())

    def init(*, shape: Any, dtype: DataTypeLike = None, domain: Any = None) -> Any:
        return default(shape=shape, dtype=dtype, domain=per_layer if len(per_layer) else None)

    return init


def _uniform(*, shape: Any, dtype: DataTypeLike = None, domain: Any = None) -> Any:
    from tempo.api.nn import init as initf

    return initf.linear_init_uniform(shape=shape, dtype=dtype, domain=domain)


def _ones(*, shape: Any, dtype: DataTypeLike = None, domain: Any = None) -> Any:
    from tempo.api.nn import init as initf

    return initf.ones(shape=shape, dtype=dtype, domain=domain)


def _normal(*, shape: Any, dtype: DataTypeLike = None, domain: Any = None) -> Any:
    from tempo.api.nn import init as initf

    return initf.normal(shape=shape, dtype=dtype, domain=domain)


def _lead(x: RecurrentTensor, n: int) -> tuple[Any, ...]:
    """The spatial dims before the last `n` (a batch, or nothing)."""
    return tuple(x.shape)[: x.ndim - n]


class _Proj:
    """A bias-free Linear whose output keeps the leading dims (matmul squeezes size-1 rows)."""

    @staticmethod
    def apply(lin: Linear, x: RecurrentTensor) -> RecurrentTensor:
        return lin(x).reshape((*_lead(x, 1), lin.out_features))


class FeedForward(Module):
    """SwiGLU feed-forward `w2(silu(w1 x) * w3 x)` of Meta's Llama."""

    def __init__(
        self,
        dim: int,
        hidden_dim: int,
        multiple_of: int,
        ffn_dim_multiplier: float | None = None,
        dtype: DataTypeLike = None,
        domain: DomainLike = None,
        independent_domain: DomainLike = None,
        state_loader: StateDictLoader | None = None,
    ) -> None:
        super().__init__(domain, independent_domain)
        self.hidden_dim = ffn_hidden_dim(hidden_dim, multiple_of, ffn_dim_multiplier)
        per = self.independent_domain
        args = (dtype, domain, independent_domain)
        h = self.hidden_dim
        self.w1 = Linear(dim, h, False, *args, _loader_init(state_loader, "w1.weight", _uniform,
                                                              per))
        self.w2 = Linear(h, dim, False, *args, _loader_init(state_loader, "w2.weight", _uniform,
                                                              per))
        self.w3 = Linear(dim, h, False, *args, _loader_init(state_loader, "w3.weight", _uniform,
                                                              per))

    def forward(self, x: Any) -> RecurrentTensor:
        g = _Proj.apply(self.w1, x)
        return _Proj.apply(self.w2, g * g.sigmoid() * _Proj.apply(self.w3, x))


class Attention(Module):
    """GQA self-attention over the temporal dim: keys/values of the visible points of the
    same layer (`k[pattern, l]`), RoPE on q and k at position `t`."""

    def __init__(self, params: LlamaArgs, seq_len: ie.Symbol, dtype: DataTypeLike = None,
                 domain: DomainLike = None, independent_domain: DomainLike = None,
                 state_loader: StateDictLoader | None = None) -> None:
        super().__init__(domain, independent_domain)
        p = params
        if p.dim % p.n_heads or p.n_heads % p.kv_heads:
            raise ShapeError(f"Llama dim {p.dim}, n_heads {p.n_heads}, n_kv_heads "
                             f"{p.kv_heads}: heads must divide dim and kv heads must divide "
                             "heads", site=user_site())
        self.n_heads, self.kv, self.hd, self.seq_len = p.n_heads, p.kv_heads, p.head_dim, seq_len
        per = self.independent_domain
        args = (dtype, domain, independent_domain)

        def lin(name: str, i: int, o: int) -> Linear:
            return Linear(i, o, False, *args, _loader_init(state_loader, f"{name}.weight",
                                                           _uniform, per))

        kv_dim = self.kv * self.hd
        self.wq, self.wk = lin("wq", p.dim, p.dim), lin("wk", p.dim, kv_dim)
        self.wv, self.wo = lin("wv", p.dim, kv_dim), lin("wo", p.dim, p.dim)
        self.rope = RotaryPositionalEmbeddings(self.hd, seq_len, p.rope_theta,
                                               rope_scaling_params=p.rope_scaling)

    def forward(self, x: Any, pattern: Any = None, prefix: PrefixCache | None = None
                ) -> RecurrentTensor:
        """One token per point at position `t` (`prefix.length + t` after a prefill, whose
        keys and values every point also attends to)."""
        from tempo.api.recurrent_tensor import RecurrentTensor as RT

        x = RT.lift(x)
        lead = _lead(x, 1)
        kv, hd, rep = self.kv, self.hd, self.n_heads // self.kv
        t = self.seq_len
        pos = None if prefix is None else RT.lift(t + prefix.length)
        q = self.rope(_Proj.apply(self.wq, x).reshape((*lead, self.n_heads, hd)), pos)
        k = self.rope(_Proj.apply(self.wk, x).reshape((*lead, kv, hd)), pos)
        v = _Proj.apply(self.wv, x).reshape((*lead, kv, hd))
        pat = ie.slice_(0, t + 1) if pattern is None else pattern
        key = tuple(pat if s.name == t.name else s for s in x.unindexed_domain.variables)
        keys, vals = k.ident()[key], v.ident()[key]  # (S, *lead, kv, hd)
        n = len(lead)
        # (S, *lead, kv, hd) -> (*lead, kv, hd, S) and (*lead, kv, S, hd)
        keys = keys.permute((*range(1, n + 3), 0))
        vals = vals.permute((*range(1, n + 2), 0, n + 2))
        qg = q.reshape((*lead, kv, rep, hd))
        scale = 1.0 / math.sqrt(hd)
        scores = (qg @ keys) * scale
        if rep == 1:  # matmul squeezed the size-1 row dim
            scores = scores.unsqueeze(-2)
        if prefix is None:
            probs = scores.softmax(-1)
            out = (probs @ vals).reshape((*lead, self.n_heads * hd))
            return _Proj.apply(self.wo, out)
        # softmax over [prefix keys, own keys] without concatenating a dynamic length
        pk, pv = prefix.keys, prefix.values  # (*lead, P, kv, hd)
        pk = pk.permute((*range(n), n + 1, n + 2, n))  # (*lead, kv, hd, P)
        pv = pv.permute((*range(n), n + 1, n, n + 2))  # (*lead, kv, P, hd)
        s_pre = ((qg @ pk) * scale).reshape((*lead, kv, rep, prefix.length))
        m = s_pre.max(-1, keepdim=True)[0].maximum(scores.max(-1, keepdim=True)[0])
        e_pre, e_own = (s_pre - m).exp(), (scores - m).exp()
        den = e_pre.sum(-1, keepdim=True) + e_own.sum(-1, keepdim=True)
        num = (e_pre @ pv).reshape((*lead, kv, rep, hd)) + (e_own @ vals).reshape(
            (*lead, kv, rep, hd))
        return _Proj.apply(self.wo, (num / den).reshape((*lead, self.n_heads * hd)))

    def prefill(self, x: Any) -> tuple[RecurrentTensor, RecurrentTensor, RecurrentTensor]:
        """All prompt positions at once: x `(*lead, P, dim)` -> (out, keys, values), keys
        and values `(*lead, P, kv, hd)` (RoPE applied) for the decode to attend to."""
        import numpy as np

        from tempo.api.recurrent_tensor import RecurrentTensor as RT

        x = RT.lift(x)
        lead, P = _lead(x, 2), int(x.shape[-2])
        n, kv, hd, rep = len(lead), self.kv, self.hd, self.n_heads // self.kv
        pos = RT.const(np.arange(P, dtype=np.int64).reshape(P, 1, 1))
        q = self.rope(_Proj.apply(self.wq, x).reshape((*lead, P, self.n_heads, hd)), pos)
        k = self.rope(_Proj.apply(self.wk, x).reshape((*lead, P, kv, hd)), pos)
        v = _Proj.apply(self.wv, x).reshape((*lead, P, kv, hd))
        qg = q.reshape((*lead, P, kv, rep, hd)).permute((*range(n), n + 1, n + 2, n, n + 3))
        kt = k.permute((*range(n), n + 1, n + 2, n)).unsqueeze(n + 1)  # (*lead,kv,1,hd,P)
        vt = v.permute((*range(n), n + 1, n, n + 2)).unsqueeze(n + 1)  # (*lead,kv,1,P,hd)
        scores = ((qg @ kt) * (1.0 / math.sqrt(hd))).reshape((*lead, kv, rep, P, P))
        causal = np.triu(np.full((P, P), -np.inf, dtype=np.float32), 1)
        probs = (scores + RT.const(causal).cast(scores.dtype)).softmax(-1)
        out = (probs @ vt).reshape((*lead, kv, rep, P, hd))
        out = out.permute((*range(n), n + 2, n, n + 1, n + 3)).reshape(
            (*lead, P, self.n_heads * hd))
        return _Proj.apply(self.wo, out), k, v


class TransformerBlock(Module):
    """Pre-norm attention and feed-forward with residuals; with the layer variable in its
    independent domain, one block is every layer."""

    def __init__(self, params: LlamaArgs, seq_len: ie.Symbol, layer_idx: ie.Symbol | int,
                 dtype: DataTypeLike = None, domain: DomainLike = None,
                 independent_domain: DomainLike = None,
                 state_loader: StateDictLoader | None = None) -> None:
        super().__init__(domain, independent_domain)
        p = params
        self.layer_idx = layer_idx
        per = self.independent_domain
        idx = layer_idx if isinstance(layer_idx, ie.Symbol) else str(layer_idx)
        sl = state_loader.append("layers").append(idx) if state_loader else None
        args = (dtype, domain, independent_domain)
        self.attention = Attention(p, seq_len, *args, sl.append("attention") if sl else None)
        self.feed_forward = FeedForward(p.dim, 4 * p.dim, p.multiple_of, p.ffn_dim_multiplier,
                                        *args, sl.append("feed_forward") if sl else None)
        self.attention_norm = RMSNorm(p.dim, p.norm_eps, True, *args,
                                      _loader_init(sl, "attention_norm.weight", _ones, per))
        self.ffn_norm = RMSNorm(p.dim, p.norm_eps, True, *args,
                                _loader_init(sl, "ffn_norm.weight", _ones, per))

    def forward(self, x: Any, pattern: Any = None, prefix: PrefixCache | None = None
                ) -> RecurrentTensor:
        h = x + self.attention(self.attention_norm(x), pattern, prefix)
        return (h + self.feed_forward(self.ffn_norm(h))).cast(x.dtype)  # f32 softmax, RoPE

    def prefill(self, x: Any) -> tuple[RecurrentTensor, RecurrentTensor, RecurrentTensor]:
        a, k, v = self.attention.prefill(self.attention_norm(x))
        h = x + a
        return (h + self.feed_forward(self.ffn_norm(h))).cast(x.dtype), k, v


class Llama(Module):
    """The decoder: `forward(tokens)` gives next-token logits at every point of `tokens`."""

    def __init__(
        self,
        params: LlamaArgs,
        temporal_dim: ie.Symbol,
        domain: DomainLike = None,
        independent_domain: DomainLike = None,
        state_loader: StateDictLoader | None = None,
    ) -> None:
        from tempo.api.tempo_context_manager import get_active_ctx_manager

        super().__init__(domain, independent_domain)
        if params.vocab_size <= 0:
            raise TempoError(f"LlamaArgs.vocab_size is {params.vocab_size}: set it (e.g. from "
                             "the tokenizer's n_words)", site=user_site())
        if params.n_layers < 1:
            raise TempoError(f"LlamaArgs.n_layers must be >= 1, got {params.n_layers}",
                             site=user_site())
        self.params = params
        self.temporal_dim = temporal_dim
        ctx = get_active_ctx_manager()
        self.layer, self.n_layers_bound = ctx.new_perm_var(params.n_layers)
        dt = dtypes.default_float
        self.dtype = dt
        own = Domain.from_(independent_domain, none_is_empty=True)
        layer_dom = own.append_dim(self.layer)
        self.layers = TransformerBlock(params, temporal_dim, self.layer, dt, domain, layer_dom,
                                       state_loader)
        sl = state_loader
        none = Domain.empty()
        self.tok_embeddings = Embedding(params.vocab_size, params.dim, dt, domain,
                                        independent_domain,
                                        _loader_init(sl, "tok_embeddings.weight", _normal, none))
        self.norm = RMSNorm(params.dim, params.norm_eps, True, dt, domain, independent_domain,
                            _loader_init(sl, "norm.weight", _ones, none))
        self.output: Linear | None = None
        has_output = sl is not None and sl.load_tensor("output.weight") is not None
        if not params.tie_embeddings_and_output or has_output:
            self.output = Linear(params.dim, params.vocab_size, False, dt, domain,
                                 independent_domain,
                                 _loader_init(sl, "output.weight", _uniform, none))

    def prefill(self, prompt: Any) -> tuple[RecurrentTensor, PrefixCache]:
        """The prompt `(*lead, P)` in one batched step (every layer over all P positions):
        the logits after its last token `(*lead, vocab)` and the per-layer keys/values that
        `forward(tokens, prefix=...)` attends to, its positions starting at P."""
        from tempo.api.recurrent_tensor import RecurrentTensor as RT

        prompt = RT.lift(prompt)
        if not dtypes.is_integer(prompt.dtype) or prompt.ndim < 1:
            raise DTypeError(f"Llama.prefill needs integer token ids (*lead, P), got "
                             f"{prompt.dtype} {tuple(prompt.shape)}", site=user_site())
        lv, P = self.layer, int(prompt.shape[-1])
        emb = self.tok_embeddings(prompt)  # (*lead, P, dim)
        dom = prompt.unindexed_domain.union(self.full_dom)  # a trained model's i too
        h = RT.placeholder(emb.shape, emb.dtype, domain=dom.append_dim(lv))
        hv = h.unindexed_domain.variables

        def at(e: Any) -> tuple[Any, ...]:
            return tuple(e if v.name == lv.name else v for v in hv)

        h[at(0)] = emb
        out, k, v = self.layers.prefill(h)
        h[at(lv + 1)] = out
        last = out[at(self.n_layers_bound - 1)].slice_dim(out.ndim - 2, P - 1, P)
        last = last.reshape((*_lead(last, 2), self.params.dim))
        return self._logits(last), PrefixCache(k.ident(), v.ident(), P)

    def forward(self, tokens: Any, attention_pattern: Any = None,
                prefix: PrefixCache | None = None) -> RecurrentTensor:
        """Logits `(*lead, vocab)` in `dtypes.default_float` at every point of `tokens`;
        after `prefill`, pass its `prefix` (token t is then at position P + t)."""
        from tempo.api.recurrent_tensor import RecurrentTensor as RT

        tokens = RT.lift(tokens)
        if not dtypes.is_integer(tokens.dtype):
            raise DTypeError(f"Llama.forward needs integer token ids, got {tokens.dtype}",
                             site=user_site())
        dom = tokens.unindexed_domain
        t, lv = self.temporal_dim, self.layer
        if not dom.has_dim(t):
            raise ShapeError(f"Llama.forward: the tokens have domain {naming.domain_word(dom)}, "
                             f"without the temporal dim {t} (one token per point of {t})",
                             site=user_site())
        emb = self.tok_embeddings(tokens)
        # the residual stream varies along the tokens' dims and the model's own: with
        # domain=(i,) (fine-tuning) the weights, hence h, change with i
        h = RT.placeholder(emb.shape, emb.dtype, domain=dom.union(self.full_dom).append_dim(lv))
        hv = h.unindexed_domain.variables

        def at(e: Any) -> tuple[Any, ...]:
            return tuple(e if v.name == lv.name else v for v in hv)

        h[at(0)] = emb
        out = self.layers(h, attention_pattern, prefix)
        h[at(lv + 1)] = out
        return self._logits(out[at(self.n_layers_bound - 1)])

    def _logits(self, last: RecurrentTensor) -> RecurrentTensor:
        x = self.norm(last)
        if self.output is None:
            table = self.tok_embeddings.embed_table
            return (x @ table.transpose(0, 1)).reshape((*_lead(x, 1), self.params.vocab_size))
        return _Proj.apply(self.output, x)

    @staticmethod
    def sample(logits: Any, temperature: float = 0.6, top_p: float = 0.9,
               greedy: bool = False) -> RecurrentTensor:
        """Next token ids `(*lead,)`: argmax, or softmax(logits / T) with nucleus `top_p`."""
        from tempo.api.recurrent_tensor import RecurrentTensor as RT

        logits = RT.lift(logits)
        if greedy or temperature <= 0.0:
            return logits.argmax(dim=-1)
        probs = (logits * (1.0 / temperature)).softmax(-1)
        return probs.sample_top_p(top_p).squeeze(-1)

    # ---------------------------------------------------------------- checkpoints
    @staticmethod
    def get_args_from_checkpoint(dir: str, n_words: int,  # noqa: A002 - API name
                                 enable_rope_scaling: bool = True,
                                 force_rope_base: float | None = None) -> LlamaArgs:
        from tempo.api.llm import checkpoint

        return checkpoint.read_args(dir, n_words, enable_rope_scaling, force_rope_base)

    @staticmethod
    def from_checkpoint(
        checkpoint_dir: str,
        temporal_dim: ie.Symbol,
        n_words: int,
        dtype: DataTypeLike,
        exec_cfg: Any,
        domain: DomainLike = None,
        independent_domain: DomainLike = None,
        enable_rope_scaling: bool = True,
        force_rope_base: float | None = None,
    ) -> Llama:
        """A Llama whose weights are the checkpoint's (Meta or Hugging Face layout), cast to
        `dtype`; the model computes in `dtypes.default_float` (set it to `dtype` first)."""
        from tempo.api.llm import checkpoint

        dt = dtypes.from_(dtype) if dtype is not None else dtypes.default_float
        if dt != dtypes.default_float:
            raise DTypeError(f"Llama.from_checkpoint(dtype={dt!r}) while dtypes.default_float "
                             f"is {dtypes.default_float!r}: the model computes in default_float,"
                             f" so set `dtypes.default_float = {dt!r}` first (or pass "
                             f"{dtypes.default_float!r})", site=user_site())
        args = checkpoint.read_args(checkpoint_dir, n_words, enable_rope_scaling,
                                    force_rope_base)
        state = checkpoint.load_meta_state_dict(checkpoint_dir, args, dtype)
        loader = StateDictLoader(state, (), dtype)
        return Llama(args, temporal_dim, domain, independent_domain, loader)

    @staticmethod
    def sp_tokenizer_from_checkpoint(checkpoint_dir: str) -> RuntimeTokenizer:
        from tempo.api.llm.tokenizer.sp_tokenizer import SPTokenizer

        return SPTokenizer.from_checkpoint(checkpoint_dir)

    @staticmethod
    def tiktoken_tokenizer_from_checkpoint(checkpoint_dir: str) -> RuntimeTokenizer:
        from tempo.api.llm.tokenizer.llama_tiktoken_tokenizer import LlamaTiktokenTokenizer

        return LlamaTiktokenTokenizer.from_checkpoint(checkpoint_dir)

    @staticmethod
    def auto_tokenizer_from_checkpoint(checkpoint_dir: str) -> RuntimeTokenizer:
        from tempo.api.llm.tokenizer.auto import auto_tokenizer

        return auto_tokenizer(checkpoint_dir)


def stop_condition(tokens: Any, stop_ids: Sequence[int]) -> RecurrentTensor:
    """True where a token id is one of `stop_ids` (EOS, end-of-turn)."""
    from tempo.api.recurrent_tensor import RecurrentTensor as RT

    tokens = RT.lift(tokens)
    out: Any = None
    for s in stop_ids:
        eq = tokens == int(s)
        out = eq if out is None else out | eq
    if out is None:
        raise TempoError("stop_condition needs at least one stop token id", site=user_site())
    return RT.lift(out)
