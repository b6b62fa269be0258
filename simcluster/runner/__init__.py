"""Runs the real measurement tools and writes trace bundles (see docs/architecture.md)."""
