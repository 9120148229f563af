"""Sandboxes (in progress)."""
