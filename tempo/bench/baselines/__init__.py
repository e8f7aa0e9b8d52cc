"""Baseline systems, one module per family; each is loaded only inside its worker process."""
