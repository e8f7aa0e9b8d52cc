"""Executors run compiled programs."""
