"""Measurements on Hugging Face BERT stacks: per-layer saved bytes, and a subprocess worker.

``python -m tempo.memsave.probe --mode peak|maxbatch|time|all ...`` runs one measurement in a fresh
process (start it with :func:`run_probe`, which sets the malloc environment) and prints one JSON
line. Saved bytes are measured in-process: they are deterministic.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

import torch
from torch import nn

from tempo.memsave import memory
from tempo.memsave.convert import convert


def build_bert(
    hidden: int,
    heads: int,
    layers: int,
    techniques: tuple[str, ...] = (),
    mask_format: str = "bit",
    intermediate: int | None = None,
    dropout: float = 0.1,
    seed: int = 0,
) -> nn.Module:
    """A randomly initialised HF ``BertModel`` (eager attention, tiny vocab), converted as asked."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    # Any: transformers 5 takes attn_implementation through **kwargs, not its typed signature
    eager: dict[str, Any] = {"attn_implementation": "eager"}
    cfg = BertConfig(
        vocab_size=64,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate or 4 * hidden,
        max_position_embeddings=512,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        **eager,
    )
    model = BertModel(cfg, add_pooling_layer=False).train()
    if techniques:
        convert(model, techniques, mask_format=mask_format)
    return model


def inputs(batch: int, seq: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 64, (batch, seq), generator=g)


def loss_of(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    return model(ids).last_hidden_state.pow(2).mean()


def train_step(model: nn.Module, ids: torch.Tensor) -> None:
    """One forward + backward (gradients accumulate; callers zero them if they care)."""
    loss_of(model, ids).backward()


def model_saved_bytes(model: nn.Module, ids: torch.Tensor, bool_masks: bool = True) -> int:
    """Bytes saved for backward by one forward (parameters excluded)."""
    ctx = memory.bool_mask_dropout() if bool_masks else _null()
    with ctx:
        n, out = memory.saved_bytes(lambda: loss_of(model, ids), model, [ids])
    del out
    return n


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def layer_saved_bytes(
    hidden: int,
    heads: int,
    seq: int,
    techniques: tuple[str, ...] = (),
    mask_format: str = "bit",
    batch: int = 1,
    bool_masks: bool = True,
) -> int:
    """Marginal saved bytes of one interior layer: a 2-layer stack minus a 1-layer stack."""
    ids = inputs(batch, seq)
    sizes = []
    for layers in (1, 2):
        model = build_bert(hidden, heads, layers, techniques, mask_format)
        sizes.append(model_saved_bytes(model, ids, bool_masks))
        del model
    return sizes[1] - sizes[0]


def _status(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _vm_rss() -> int:
    return _status("VmRSS")


def _reset_peak_rss() -> bool:
    """Reset VmHWM (Linux >= 4.0) so the peak excludes imports, init and warm-up."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _worker(args: argparse.Namespace) -> dict[str, Any]:
    torch.set_num_threads(args.threads)
    techniques = tuple(t for t in args.techniques.split(",") if t)
    model = build_bert(args.hidden, args.heads, args.layers, techniques, args.mask_format)
    ctx = memory.bool_mask_dropout() if args.bool_masks else _null()
    result: dict[str, Any] = {"techniques": list(techniques), "mask_format": args.mask_format}
    with ctx, contextlib.ExitStack() as policy:
        train_step(model, inputs(1, args.seq))  # warm-up: threads, allocator, lazy init
        model.zero_grad(set_to_none=False)
        if args.mode in ("peak", "all"):
            ids = inputs(args.batch, args.seq)
            policy.enter_context(memory.freed_memory_returned())
            reset = _reset_peak_rss()
            r0 = _vm_rss()
            loss = loss_of(model, ids)
            result["rss_after_forward_mib"] = (_vm_rss() - r0) / 2**20
            loss.backward()
            del loss
            if reset:
                peak = _status("VmHWM")
            else:  # lifetime maximum: includes the warm-up
                peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            result["peak_minus_base_mib"] = (peak - r0) / 2**20
            result["peak_source"] = "VmHWM after clear_refs" if reset else "ru_maxrss"
            model.zero_grad(set_to_none=False)
        if args.mode in ("time", "all"):
            ids = inputs(args.batch, args.seq)
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                train_step(model, ids)
                times.append(time.perf_counter() - t0)
            result["step_s_median"] = statistics.median(times)
            result["step_s_all"] = times
        if args.mode in ("maxbatch", "all"):
            cap = int(args.cap_mib * 2**20)

            def fits(b: int) -> bool:
                return memory.step_fits_under_cap(
                    lambda: train_step(model, inputs(b, args.seq)), cap
                )

            result["max_batch"] = memory.largest_batch(fits, limit=args.max_batch)
            result["cap_mib"] = args.cap_mib
    return result


def run_probe(**kwargs: Any) -> dict[str, Any]:
    """Run one worker measurement in a fresh subprocess; keys are the CLI flags."""
    cmd = [sys.executable, "-m", "tempo.memsave.probe"]
    for key, value in kwargs.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            if value:
                cmd.append(flag)
        else:
            cmd += [flag, str(value)]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=memory.subprocess_env(), check=False
    )
    if proc.returncode != 0:
        return {"error": proc.stderr[-2000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mode", choices=["peak", "maxbatch", "time", "all"], required=True)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--techniques", default="")
    ap.add_argument("--mask-format", default="bit")
    ap.add_argument("--bool-masks", action="store_true", help="dropout saves bool masks (GPU-like)")
    ap.add_argument("--cap-mib", type=float, default=1400.0)
    ap.add_argument("--max-batch", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    print(json.dumps(_worker(ap.parse_args(argv))))


if __name__ == "__main__":
    main()
