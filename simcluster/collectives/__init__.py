"""Collectives as NCCL runs them: ring and chain schedules, protocols, a closed form and a DES."""
