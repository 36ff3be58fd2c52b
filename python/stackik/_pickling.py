"""Pickling support: objects drop what a worker process rebuilds cheaply.

Pinocchio ``Data``, coal ``GeometryData``, locks and compiled-solver handles are not
pickled: each class lists them as transient and rebuilds them on unpickling from the
pickled description and state, so a solver sent to a worker process computes exactly
what the original computes (Pinocchio models and geometry pickle exactly).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def without(state: dict[str, Any], transient: Iterable[str]) -> dict[str, Any]:
    """A copy of an object's ``__dict__`` without the transient attributes."""
    out = dict(state)
    for name in transient:
        out.pop(name, None)
    return out
