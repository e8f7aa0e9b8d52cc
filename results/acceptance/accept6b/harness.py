"""accept6b's configs for the shared harness (../harness.py)."""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from harness import Alarm, cli, main, make_cfg, to_np  # noqa: E402,F401

CONFIGS = ["torch:default", "torch:vec_off", "torch:fus_off", "torch:both_off", "jax:default", "jax:both_off", "numpy:default", "numpy:both_off", "torch:test_cfg", "jax:test_cfg", "numpy:test_cfg"]

if __name__ == "__main__":
    cli(CONFIGS)
