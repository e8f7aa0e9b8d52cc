"""Tokenizers read from local checkpoint files (no network)."""
