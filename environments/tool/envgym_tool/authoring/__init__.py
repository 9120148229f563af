"""Generators of the bundled tool-use task suites."""

__all__: list[str] = []
