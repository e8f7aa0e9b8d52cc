"""Tempo's evaluation harness (`python -m tempo.bench`): runners, baselines, plots, report.

Nothing in the library imports this package; it imports the library (and its baselines) only.
"""
