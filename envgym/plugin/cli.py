"""What a family needs to add an ``envgym`` subcommand (part of the plug-in surface).

Covered by Semantic Versioning like all of :mod:`envgym.plugin` (see ``CHANGELOG.md``). A subcommand is an
``add_parser(subparsers)`` hook registered in the ``envgym.cli`` entry-point group; it may use:

- argument types that fail with argparse's message: :func:`positive_int`, :func:`positive_seconds`;
- output flags: :func:`output_dir` / :func:`output_file` make the folder ready or say why not;
- :class:`LazyConsole`, a rich console built when something is first printed (``envgym --help`` stays fast).
"""

from __future__ import annotations

from envgym.cli import LazyConsole, output_dir, output_file, positive_int, positive_seconds

__all__ = ["LazyConsole", "output_dir", "output_file", "positive_int", "positive_seconds"]
