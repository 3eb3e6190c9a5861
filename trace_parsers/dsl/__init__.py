"""DSView / DSLogic ``.dsl`` captures: ``read_dsview`` and ``sniff``."""

from __future__ import annotations

from .reader import read_dsview, sniff

__all__ = ["read_dsview", "sniff"]
