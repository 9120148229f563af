"""Adapters that let external RL trainers consume envgym: whole episodes, token-exact, verdicts as rewards.

- :mod:`envgym.rl.adapters.episodes` — one episode through the recording proxy → trajectory + training samples
- :mod:`envgym.rl.adapters.trl` — TRL ``GRPOTrainer``'s ``rollout_func``
- :mod:`envgym.rl.adapters.verifiers_env` — a PrimeIntellect ``verifiers`` env (``vf.load_environment("envgym")``)
- :mod:`envgym.rl.adapters.verl` — a verl agent loop (``envgym_agent``)

Each trainer is imported only by its own module; ``import envgym.rl.adapters`` imports none. See README.md here.
"""

__all__: list[str] = []  # the modules are the API; importing the package imports none of them
