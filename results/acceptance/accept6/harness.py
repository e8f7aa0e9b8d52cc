"""accept6's configs for the shared harness (../harness.py)."""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from harness import Alarm, cli, main, make_cfg, to_np  # noqa: E402,F401

CONFIGS = ["torch:default", "torch:both_off", "torch:test_cfg", "jax:default", "jax:both_off",
           "jax:test_cfg", "numpy:default", "numpy:both_off", "numpy:test_cfg"]

if __name__ == "__main__":
    cli(CONFIGS)
