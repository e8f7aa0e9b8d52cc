"""accept4's table: python results/acceptance/accept4/grid.py [extra configs...]."""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from harness import grid  # noqa: E402

CONFIGS = ["torch:default", "torch:vec_off", "torch:group_off", "jax:default", "numpy:default"]

if __name__ == "__main__":
    grid("/tmp/accept4/results.jsonl", CONFIGS + sys.argv[1:])
