"""Timed scenarios, one module each, exporting ``SCENARIO`` (tools + policy); see ``envgym_timed.toolkit``."""

__all__: list[str] = []
