"""Moved to :mod:`analyzers.crossval.align` (kept so that older imports keep working)."""

from .crossval.align import PATTERN, Alignment, SiteFit, _pair_nearest, align, interval_tolerance

__all__ = ["PATTERN", "Alignment", "SiteFit", "_pair_nearest", "align", "interval_tolerance"]
