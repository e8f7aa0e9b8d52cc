"""`MultiHeadAttention` at the import path programs use
(`tempo.api.nn.multihead_attention`); defined in `attention`."""

from tempo.api.nn.attention import MultiHeadAttention

__all__ = ["MultiHeadAttention"]
