"""Durations the API takes in (timeouts, leases, waits): one rule for what a number of
seconds may be, so that NaN, infinities and negatives are refused alike everywhere."""

from __future__ import annotations

import math

from .errors import InertTypeError, InertValueError

__all__ = ["seconds"]


def seconds(
    name: str,
    value: object,
    *,
    zero_ok: bool = False,
    finite: bool = True,
    error: type[InertValueError] = InertValueError,
) -> float:
    """``value`` checked as a duration named ``name``: a real number, positive (or 0 with
    ``zero_ok``) and finite unless ``finite`` is false. NaN is never one.

    Raises:
        InertTypeError: ``value`` is no number (a bool, a str, ``None``).
        InertValueError: it is out of range (as ``error``, a subclass a caller names).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InertTypeError(f"{name} must be a number of seconds, not {type(value).__name__} {value!r}")
    try:
        v = float(value)
    except OverflowError:  # an int past a float's range (TOML and JSON ints have no limit): beyond any finite one
        v = math.inf if value > 0 else -math.inf
    if not (v >= 0 if zero_ok else v > 0) or (finite and not math.isfinite(v)):
        wanted = ("non-negative" if zero_ok else "positive") + (", finite" if finite else "")
        shown = repr(value) if len(repr(value)) <= 40 else f"an integer of {len(str(abs(value)))} digits"
        raise error(f"{name} must be a {wanted} number of seconds, not {shown}")
    return v
