"""simcluster: a discrete-event simulator of AI training clusters, calibrated from real traces."""

__version__ = "0.1.0"
