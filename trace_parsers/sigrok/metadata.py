"""The ``metadata`` entry of a sigrok session (``.sr``) and sigrok's sample-rate strings.

GKeyFile semantics, line by line (``logic-captures.md`` §1.2, §1.5): ``[section]`` headers,
``key = value`` or ``key=value``, leading whitespace stripped (v1 writes `` trigger1 = 0``, which
Python's configparser would glue onto the previous value), ``#``/``;`` comments.
"""

from __future__ import annotations

import re
from fractions import Fraction

#: at most 19 digits on each side of the point (longer numbers are no sample rate: ``None``)
_RATE_RE = re.compile(r"^\s*(\d{1,19})(?:\.(\d{0,19}))?\s*([kKmMgGtTpPeE])?\s*(?:[hH][zZ])?\s*$")
_MULT = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "p": 10**15, "e": 10**18}


def parse_keyfile(text: str) -> dict[str, dict[str, tuple[str, int]]]:
    """``{section: {key: (value, line_number)}}``; keys and values stripped, later keys win."""
    out: dict[str, dict[str, tuple[str, int]]] = {}
    sec = ""
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s[0] in "#;":
            continue
        if s.startswith("[") and s.endswith("]"):
            sec = s[1:-1].strip()
            out.setdefault(sec, {})
            continue
        if "=" not in s:
            continue
        k, v = s.split("=", 1)
        out.setdefault(sec, {})[k.strip()] = (v.strip(), lineno)
    return out


def parse_samplerate(s: str) -> int | None:
    """Parse a sigrok size string like ``sr_parse_sizestring`` into an exact integer (Hz).

    ``m`` and ``M`` both mean mega (sigrok's quirk); a fraction is kept exactly; ``None`` if the
    string is not a size.

    >>> [parse_samplerate(x) for x in ("1 MHz", "12.5 kHz", "2 mHz", "1MHz", "33.333333 MHz", "17 Hz")]
    [1000000, 12500, 2000000, 1000000, 33333333, 17]
    >>> parse_samplerate("fast") is None
    True
    """
    m = _RATE_RE.match(s)
    if not m:
        return None
    whole, frac, prefix = m.group(1), m.group(2) or "", m.group(3)
    mult = _MULT[prefix.lower()] if prefix else 1
    val = Fraction(int(whole)) + (Fraction(int(frac), 10 ** len(frac)) if frac else 0)
    return int(val * mult)


def format_samplerate(hz: int) -> str:
    """The shortest exact sigrok string for ``hz`` (``sr_samplerate_string`` style).

    >>> [format_samplerate(x) for x in (1_000_000, 12_500, 1_234_567, 3, 2_400_000_000)]
    ['1 MHz', '12.5 kHz', '1.234567 MHz', '3 Hz', '2.4 GHz']
    """
    hz = int(hz)
    if hz <= 0:
        raise ValueError(f"samplerate must be a positive integer, got {hz!r}")
    for div, unit in ((10**9, "GHz"), (10**6, "MHz"), (10**3, "kHz")):
        if hz >= div:
            q, r = divmod(hz, div)
            if r == 0:
                s = f"{q} {unit}"
            else:
                digits = len(str(div)) - 1
                s = f"{q}.{str(r).rjust(digits, '0').rstrip('0')} {unit}"
            # libsigrok adds the fraction as a double; use plain Hz when that would not round-trip
            frac = s.split(" ")[0].split(".")
            if len(frac) == 2 and int(float("0." + frac[1]) * div + q * div) != hz:
                return f"{hz} Hz"
            return s
    return f"{hz} Hz"
