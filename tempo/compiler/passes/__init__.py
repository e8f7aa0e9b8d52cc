"""Compiler passes: each module has one entry `run(sdg, cfg) -> sdg`."""
