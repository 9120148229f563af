"""Bug injection (SWE-smith's idea): mutate a real library's source, keep the bugs its own tests catch.

``mutations`` finds and applies the transformations, ``runner`` runs the library's tests in a container,
``statement`` writes the issue text from the observed failure, ``build`` makes a suite of SWE-bench
instances and ``validate`` re-checks one from the sdist alone. Command line: ``python -m envgym_swe.inject``.
"""

__all__: list[str] = []
