"""The ``inert`` console script's entry, outside the ``inert`` package on purpose: any module
inside it imports the package first (its ``__init__`` loads the core and the whole API, about
0.2 s), before a ``try`` in that module could run, so a Ctrl-C then printed a traceback. Here
the import itself is inside the ``try``."""

from __future__ import annotations

import contextlib
import sys

__all__ = ["main"]

INTERRUPTED = 130
"""The exit status of a command stopped by Ctrl-C (SIGINT), as shells report one: 128 + 2
(``inert.cli.INTERRUPTED``, which cannot be imported before the package is)."""


def main() -> int:
    """Runs ``inert.cli.main``; a Ctrl-C while the package imports ends with one line and 130,
    as one during a command does (``inert.cli.main`` says that for itself)."""
    try:
        from inert.cli import main as cli_main

        return cli_main()
    except KeyboardInterrupt:
        # A second Ctrl-C, or no stderr: the status still says it.
        with contextlib.suppress(KeyboardInterrupt, OSError):
            print("inert: interrupted (Ctrl-C)", file=sys.stderr)
        return INTERRUPTED
