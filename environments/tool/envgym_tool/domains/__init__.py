"""Tool-use domains; each module exports ``DOMAIN``."""

__all__: list[str] = []
