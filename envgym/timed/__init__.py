"""Time model for time-evolving environments (see the modules of this package)."""
