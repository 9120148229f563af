"""The bundled asynchronous trainer (`envgym train`): GRPO-family loss, bounded staleness, weight sync."""
