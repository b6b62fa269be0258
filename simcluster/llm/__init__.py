"""LLM training at scale: transformer workload, Megatron-style parallelism, per-GPU memory, one iteration as a DES.

spec (what is trained, how it is split) -> ops (compute per micro-batch on one GPU) and comm (what each
parallelism sends, timed on the collective / fabric models) -> memory (per-GPU bytes) and simulate (one
pipeline as a SimPy DES) -> predict (LlmResult). See docs/models/llm.md.
"""
