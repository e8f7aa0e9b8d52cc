"""`python -m tempo.bench.incremental` at a tiny size: both variants train the same model
(losses agree with each other and the tracked runs'), and the blocked one peaks lower."""

from __future__ import annotations

from tempo.bench.incremental import compare


def test_incremental_bench_blocks_the_batch_and_peaks_lower() -> None:
    off, on, agree = compare(batch=2048, hid=128, iters=2, reps=1)
    assert agree < 1e-5
    assert on["losses"] == on["tracked_losses"] and off["losses"] == off["tracked_losses"]
    assert off["blocks"] == {} and on["blocks"]
    assert on["peak"] < off["peak"] / 2
