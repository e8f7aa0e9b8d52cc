"""Small user-facing helpers (API.md §0: `tempo.utils.make_sink`)."""
