"""LLM models whose layers are one dimension of the program."""
