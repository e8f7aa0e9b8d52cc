"""Runnable Tempo programs (`python -m examples.rl.ppo --help`)."""
