"""accept6b's table: python results/acceptance/accept6b/grid.py [extra configs...]."""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from harness import grid  # noqa: E402

CONFIGS = ["torch:default", "torch:vec_off", "torch:fus_off", "torch:both_off", "jax:default", "jax:both_off", "numpy:default", "numpy:both_off", "torch:test_cfg", "jax:test_cfg", "numpy:test_cfg"]

if __name__ == "__main__":
    grid("/tmp/accept6b/results.jsonl", CONFIGS + sys.argv[1:])
