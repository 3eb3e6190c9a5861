"""Bounded number parsing for every text field a reader takes from a file.

Python's ``int()`` raises ``ValueError`` on more than 4,300 digits and NumPy raises
``OverflowError`` when a value does not fit its dtype; ``round()`` raises on inf and nan.  Readers
never call those on file content directly: they use these helpers, which return ``None`` for
anything that is not a plain number inside the stated range, and report that with their own
error code and byte offset.

>>> parse_uint("42", hi=255), parse_uint("256", hi=255), parse_uint("9" * 5000, hi=255)
(42, None, None)
>>> parse_int("-7", lo=-10, hi=10), parse_int(" 12 ", lo=0, hi=99), parse_int("1e3", lo=0, hi=10**6)
(-7, 12, None)
>>> float_to_int(2.6, lo=0, hi=10), float_to_int(float("-inf"), lo=-9, hi=9), float_to_int(1e308, lo=0, hi=9)
(3, None, None)
"""

from __future__ import annotations

import math

#: largest value any reader accepts from an integer text field: ``2**63 - 1`` (int64) fits in 19
#: digits, so longer digit strings are rejected before ``int()`` sees them.
INT64_MAX = (1 << 63) - 1
_MAX_DIGITS = 19

#: highest sample/tick rate a reader accepts from a file (1 THz): ``ticks_to_ns`` stays exact and
#: every rate fits ``uint64``.
MAX_RATE_HZ = 10**12


def parse_int(text: str | bytes, *, lo: int, hi: int) -> int | None:
    """``int(text)`` for an optionally signed decimal of at most 19 digits within ``[lo, hi]``, else None."""
    if isinstance(text, bytes):
        try:
            text = text.decode("ascii")
        except UnicodeDecodeError:
            return None
    s = text.strip()
    digits = s[1:] if s[:1] in ("+", "-") else s
    if not digits or len(digits) > _MAX_DIGITS or not (digits.isascii() and digits.isdigit()):
        return None
    v = int(s)
    return v if lo <= v <= hi else None


def parse_uint(text: str | bytes, *, hi: int = INT64_MAX) -> int | None:
    """A non-negative decimal (no sign) of at most 19 digits, ``<= hi``; else None."""
    s = text.strip() if isinstance(text, str) else text.strip().decode("ascii", "replace")
    if s[:1] in ("+", "-"):
        return None
    return parse_int(s, lo=0, hi=hi)


def float_to_int(x: float, *, lo: int, hi: int) -> int | None:
    """``round(x)`` when ``x`` is finite and the result lies in ``[lo, hi]``; else None."""
    try:
        xf = float(x)
    except (TypeError, ValueError, OverflowError):
        return None
    if not math.isfinite(xf) or not (lo - 1 <= xf <= hi + 1):
        return None
    v = round(xf)
    return v if lo <= v <= hi else None


def rate_ok(hz: int | None) -> bool:
    """A sample/tick rate a reader can use: an integer in ``1 .. MAX_RATE_HZ``."""
    return hz is not None and 0 < hz <= MAX_RATE_HZ
