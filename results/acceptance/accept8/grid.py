"""accept8's table: python results/acceptance/accept8/grid.py [extra configs...]."""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from harness import grid  # noqa: E402

CONFIGS = ["torch:default", "torch:both_off", "jax:default", "numpy:default", "torch:test_cfg", "jax:test_cfg", "numpy:test_cfg"]

if __name__ == "__main__":
    grid(__import__("os").path.join(__import__("os").path.dirname(__import__("os").path.abspath(__file__)), "results.jsonl"), CONFIGS + sys.argv[1:])
