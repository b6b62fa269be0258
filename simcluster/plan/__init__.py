"""Capacity planning: cost and energy per point (cost), the parallelism and hardware search (search)."""
