"""Experiment definitions; importing a module registers its experiments."""
