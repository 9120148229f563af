"""Adapters that let external RL trainers consume envgym: whole episodes, token-exact, verdicts as rewards.

- :mod:`envgym.adapters.episodes` — one episode through the recording proxy → trajectory + training samples
- :mod:`envgym.adapters.trl` — TRL ``GRPOTrainer``'s ``rollout_func``
- :mod:`envgym.adapters.verifiers_env` — a PrimeIntellect ``verifiers`` environment (``vf.load_environment("envgym")``)
- :mod:`envgym.adapters.verl` — a verl agent loop (``envgym_agent``)

Each trainer is imported only by its own module; ``import envgym.adapters`` imports none. See README.md here.
"""
