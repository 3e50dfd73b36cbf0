"""The canonical form of a call's arguments.

One spelling of a call's arguments, shared by the journal (which hashes it
into the fingerprint that tells a replayed key from a conflicting one) and by
reconciliation (which matches dispatched calls with accepted ones by it).
It lives apart from both so that reconciliation never imports storage.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_arguments", "fingerprint"]


def canonical_arguments(arguments: dict[str, Any]) -> str:
    """The arguments as canonical JSON: sorted keys, no spaces, UTF-8 kept as is.

    Args:
        arguments: a call's arguments as parsed from its block.

    Returns:
        The JSON text; values JSON cannot spell are written as their ``repr``.
    """
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)


def fingerprint(arguments: dict[str, Any]) -> str:
    """The SHA-256 of :func:`canonical_arguments`, hex: what the journal compares.

    Args:
        arguments: a call's arguments.

    Returns:
        64 hex digits.
    """
    return hashlib.sha256(canonical_arguments(arguments).encode()).hexdigest()
