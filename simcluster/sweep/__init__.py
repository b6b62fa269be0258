"""Sweeps: many scenario points from one scenario (spec), run on Dask (run), stored as Parquet parts (store)."""
