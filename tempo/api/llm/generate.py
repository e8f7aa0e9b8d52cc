"""Decoding a batch of prompts with a `Llama`: the token recurrence, sampling, and a sink
that streams each step's tokens to Python as soon as they exist.

    tok[t < P] = prompt[:, t]                                   (the prompt, left-padded)
    tok[t]     = where(done[t-1], pad, sample(llama(tok))[t-1])     (afterwards)
    done[t]    = t >= P and (done[t-1] or tok[t] is a stop token)

With `prefill=True` the prompt runs as one batched step before the loop (every layer over
all P positions, `Llama.prefill`) and t counts new tokens only. With stop tokens, `done` is
the boolean bound of `t` (`{T: (P + max_new, done)}`): the
decode loop ends at the first step where every sequence has stopped, and a sequence that
stopped earlier emits `pad` meanwhile. `Generation` records the program in its own context;
`run()` executes it and `stream()` yields the tokens of each step while the executor ticks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from tempo.api.llm.models.llama import Llama, stop_condition
from tempo.core import index_expr as ie
from tempo.core.dtype import DataTypeLike, dtypes
from tempo.core.errors import TempoError, UnsupportedError, user_site
from tempo.runtime.host_arrays import to_host


class Generation:
    """Greedy or nucleus decoding of `prompt` `(batch, P)` for `max_new_tokens` steps.

    `logits_sink(step, logits)` (optional) receives every step's `(batch, vocab)` logits;
    `stop_tokens` end each sequence (default: none, every sequence runs to the maximum);
    `pad_id` is what a stopped sequence emits (default: its first stop token); `window`
    makes attention read only the last `window` positions."""

    def __init__(self, checkpoint_dir: str, prompt: np.ndarray, max_new_tokens: int,
                 exec_cfg: Any = None, dtype: DataTypeLike = None, greedy: bool = True,
                 temperature: float = 0.6, top_p: float = 0.9, n_words: int = 0,
                 logits_sink: Callable[[int, Any], None] | None = None,
                 stop_tokens: Sequence[int] = (), pad_id: int | None = None,
                 window: int | None = None, prefill: bool = False) -> None:
        from tempo.api import TempoContext
        from tempo.core.configs import ExecutionConfig

        prompt = np.asarray(prompt)
        if prompt.ndim != 2 or prompt.shape[1] < 1:
            raise TempoError(f"prompt must be (batch, prompt_len >= 1), got {prompt.shape}",
                             site=user_site())
        if max_new_tokens < 1:
            raise TempoError(f"max_new_tokens must be >= 1, got {max_new_tokens}",
                             site=user_site())
        if prefill and window is not None:
            raise UnsupportedError("window attention after a batched prefill", site=user_site())
        self.cfg = exec_cfg or ExecutionConfig(dev="cpu", backend="torch")
        self.batch, self.prompt_len = int(prompt.shape[0]), int(prompt.shape[1])
        self.prompt, self.prefill = prompt, prefill
        self.max_new_tokens = max_new_tokens
        self.total = self.prompt_len + max_new_tokens
        self._rows: list[Any] = []
        self._skip = 0 if prefill else self.prompt_len  # rows of t that are prompt tokens
        dt = dtypes.from_(dtype) if dtype is not None else dtypes.default_float
        ctx = TempoContext(self.cfg, num_dims=1)
        ((t, T),) = ctx.variables_and_bounds
        self.t, self.T = t, T
        with ctx:
            self.model = Llama.from_checkpoint(checkpoint_dir, t, n_words, dt, self.cfg)
            steps = self._record(window, greedy, temperature, top_p, logits_sink,
                                 stop_tokens, pad_id)
        self.exe = ctx.compile({T: steps})

    def _record(self, window: int | None, greedy: bool, temperature: float, top_p: float,
                logits_sink: Callable[[int, Any], None] | None, stop_tokens: Sequence[int],
                pad_id: int | None) -> Any:
        """The token recurrence; returns t's bound (an int, or (max, done) with stops)."""
        from tempo.api import RecurrentTensor as RT

        t, P, B = self.t, self.prompt_len, self.batch
        pr = RT.const(self.prompt.astype(dtypes.to_np(dtypes.default_int)),
                      dtype=dtypes.default_int)
        tok = RT.placeholder((B,), dtypes.default_int, domain=(t,))
        # rows of t before the first sampled one: the prompt, or nothing after a prefill
        first, prefix, logits0 = P, None, None
        if self.prefill:
            logits0, prefix = self.model.prefill(pr)
            first = 0
            tok[0] = Llama.sample(logits0, temperature, top_p, greedy).cast(dtypes.default_int)
        else:
            tok[t < P] = pr.index(1, t)
        pattern = None if window is None else ie.slice_(ie.max(0, t - window + 1), t + 1)
        logits = self.model.forward(tok, pattern, prefix)
        nxt = Llama.sample(logits, temperature, top_p, greedy).cast(dtypes.default_int)
        bound: Any = self.total - (P if self.prefill else 0)
        if stop_tokens:
            done = RT.placeholder((B,), dtypes.bool_, domain=(t,))
            pad = RT.const(np.full((B,), stop_tokens[0] if pad_id is None else pad_id),
                           dtype=dtypes.default_int)
            tok[True] = done[t - 1].where(pad, nxt[t - 1])
            if first > 0:
                done[t < first] = RT.const(np.zeros((B,), bool), dtype=dtypes.bool_)
                done[True] = done[t - 1] | stop_condition(tok, stop_tokens)
            else:
                done[0] = stop_condition(tok, stop_tokens)
                done[True] = done[t - 1] | stop_condition(tok, stop_tokens)
            bound = (bound, done)
        else:
            tok[True] = nxt[t - 1]
        self.tokens, self.logits = tok, logits
        rows = self._rows
        tok.sink_udf(lambda x: rows.append(x))
        if logits_sink is not None:
            sink, off = logits_sink, (P if self.prefill else 0)
            logits.sink_with_ts_udf(lambda x, ts: sink(off + int(ts[t]), x))
            if logits0 is not None:
                logits0.sink_udf(lambda x: sink(P - 1, x))
        return bound

    def run(self) -> np.ndarray:
        """All tokens `(batch, P + new tokens)` (prompt included)."""
        for _ in self.stream():
            pass
        return self.result()

    def execute(self) -> None:
        """One whole decode without stepping (the fastest way to run it)."""
        self._rows.clear()
        self.exe.reset()
        self.exe.execute()

    def stream(self) -> Iterator[np.ndarray]:
        """The new tokens `(batch,)` of each decode step, as the executor produces them."""
        self._rows.clear()
        self.exe.reset()
        seen = 0
        running = True
        while running:
            running = self.exe.tick()
            while seen < len(self._rows):
                if seen >= self._skip:
                    yield _np(self._rows[seen])
                seen += 1

    def result(self) -> np.ndarray:
        """Tokens `(batch, steps run)` with the prompt first: fewer than P + max_new_tokens
        when every sequence stopped."""
        rows = np.stack([_np(r) for r in self._rows], axis=1)
        if self.prefill:
            rows = np.concatenate([self.prompt.astype(rows.dtype), rows], axis=1)
        return rows


def _np(x: Any) -> np.ndarray:
    return to_host(x)


def encode_prompts(tokenizer: Any, prompts: Sequence[str], bos: bool = True) -> np.ndarray:
    """Token ids `(batch, P)` of the prompts, left-padded (RuntimeTokenizer's pad rule)."""
    lists = [tokenizer.encode(p, bos=bos) for p in prompts]
    p = max(len(x) for x in lists)
    pad = tokenizer._pad_token()
    out = np.full((len(lists), p), pad, dtype=np.int64)
    for b, ids in enumerate(lists):
        out[b, p - len(ids):] = ids
    return out
