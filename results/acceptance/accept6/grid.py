"""accept6's table: python results/acceptance/accept6/grid.py [extra configs...]."""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from harness import grid  # noqa: E402

CONFIGS = ["torch:default", "torch:both_off", "torch:test_cfg", "jax:default", "jax:both_off",
           "jax:test_cfg", "numpy:default", "numpy:both_off", "numpy:test_cfg"]

if __name__ == "__main__":
    grid("/tmp/accept6/results.jsonl", CONFIGS + sys.argv[1:])
