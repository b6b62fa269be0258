"""Measurements -> model cards (scipy fits), and predicted-vs-measured checks."""
