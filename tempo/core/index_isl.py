"""Moved to `tempo.core.index_expr.isl_bridge`; this path re-exports it for existing imports."""

from tempo.core.index_expr.isl_bridge import *  # noqa: F403
