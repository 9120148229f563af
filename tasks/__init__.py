"""Task data: one folder per suite of JSONL task files (see tasks/README.md)."""
