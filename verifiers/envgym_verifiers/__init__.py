"""Grading assets: judge prompt templates and reusable rubric definitions (data, not code)."""
