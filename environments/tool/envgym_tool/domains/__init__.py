"""Tool-use domains; each module exports ``DOMAIN``."""
