"""Tempo: recurrent-tensor programs compiled through a polyhedral schedule."""
