"""The bundled asynchronous trainer (`envgym train`): GRPO-family loss, bounded staleness, weight sync."""

__all__: list[str] = []  # the modules are the API; importing the package imports none of them
