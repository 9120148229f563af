"""The SWE family: repositories in containers, graded by hidden tests (SWE-bench format in and out)."""
