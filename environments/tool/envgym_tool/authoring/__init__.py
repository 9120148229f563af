"""Generators of the bundled tool-use task suites."""
