"""Adapters that let external RL trainers (TRL, PrimeIntellect verifiers / prime-rl, verl) consume envgym."""
