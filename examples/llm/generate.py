"""Generate text with a Llama checkpoint, printing tokens as they stream.

    python examples/llm/generate.py --checkpoint DIR --prompt "Once upon" --max-new-tokens 32

DIR is a Meta layout (params.json + consolidated.00.pth, optionally under original/) or a
Hugging Face layout (config.json + *.safetensors) with its tokenizer files. No checkpoint at
hand (this machine has no network)? `--make-tiny DIR` first writes a small random one there,
with a tokenizer trained locally. The prompt is prefilled in one batched step, then decoding
stops per prompt at the tokenizer's stop tokens.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

# Run from a clone without installing: put the repository root on the path.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True, help="checkpoint directory")
    ap.add_argument("--prompt", action="append", required=True,
                    help="a prompt (repeat for a batch)")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    ap.add_argument("--top-p", type=float, default=0.9)
    ap.add_argument("--no-prefill", action="store_true",
                    help="feed the prompt one token per step instead of one batched prefill")
    ap.add_argument("--dtype", default="float32", choices=("float32", "float16", "bfloat16"),
                    help="the model's dtype (sets dtypes.default_float; API §6.5)")
    ap.add_argument("--make-tiny", action="store_true",
                    help="first write a small random checkpoint to --checkpoint")
    args = ap.parse_args(argv)

    import torch

    from tempo.api.llm.generate import Generation, encode_prompts
    from tempo.api.llm.models.llama import Llama
    from tempo.api.llm.tiny_checkpoint import write_tiny_checkpoint
    from tempo.core.dtype import dtypes

    torch.set_num_threads(1)
    if args.make_tiny:
        write_tiny_checkpoint(args.checkpoint)
        print(f"wrote a tiny random Llama to {args.checkpoint}", file=sys.stderr)
    tok = Llama.auto_tokenizer_from_checkpoint(args.checkpoint)
    prompt = encode_prompts(tok, args.prompt)
    t0 = time.process_time()
    dtypes.default_float = getattr(dtypes, args.dtype)  # the model computes in default_float
    gen = Generation(args.checkpoint, prompt, args.max_new_tokens, n_words=tok.n_words,
                     dtype=dtypes.default_float,
                     greedy=args.temperature <= 0.0, temperature=max(args.temperature, 1e-6),
                     top_p=args.top_p, stop_tokens=tok.stop_tokens, pad_id=tok.eos_id,
                     prefill=not args.no_prefill)
    print(f"compiled in {time.process_time() - t0:.2f} CPU s", file=sys.stderr)
    texts = [[] for _ in args.prompt]
    stopped = [False] * len(args.prompt)
    t1 = time.perf_counter()
    n = 0
    for step in gen.stream():
        n += 1
        for b, t in enumerate(step.tolist()):
            if stopped[b]:
                continue
            if t in tok.stop_tokens:
                stopped[b] = True
                continue
            texts[b].append(t)
            if len(args.prompt) == 1:  # one prompt: print each token as it arrives
                print(tok.decode([t]), end="", flush=True)
    dt = time.perf_counter() - t1
    if len(args.prompt) == 1:
        print()
    else:
        for p, ids in zip(args.prompt, texts):
            print(f"{p!r} -> {tok.decode(ids)!r}")
    print(f"{n} steps in {dt:.2f} s ({1e3 * dt / max(n, 1):.1f} ms/step)", file=sys.stderr)


if __name__ == "__main__":
    main()
