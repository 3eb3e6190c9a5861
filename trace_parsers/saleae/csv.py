"""``read_saleae_csv``: Saleae Logic 2 digital CSV export (``digital.csv``).

Accepted (``logic-captures.md`` §5.1): header ``Time [s],<name>,…``; one row per time at which any
channel changes (never one row per sample), the first row being the initial state; times in seconds
relative to the app's origin (negative before a trigger, up to 9 decimals) or ISO-8601 wall-clock
(``2026-01-30T14:06:09.197352115+00:00``); values ``0``/``1``, ``X`` = no data (keeps the previous
level; counted in a NOTICE); the repeated final row (end of capture) gives the capture length and
is not an edge.  Times are parsed exactly to integer ns (no float).

The CSV carries no sample rate (§5.1). Without ``samplerate=`` nothing is assumed about it: the
times are kept exactly as written, in ns (``tick_hz = 1e9`` is the time unit, ``ts_raw`` = ns since
the first row), ``meta.extra["samplerate"]`` is None, ``extra["time_resolution_ns"]`` is what the
file's decimals resolve (9 decimals: 1 ns), and a ``SALEAE_NO_SAMPLERATE`` notice says so. With it,
``ts_raw = round(ns * samplerate / 1e9)`` (``extra["samplerate_source"] == "option"``).  ``ts`` keeps
the file's origin for relative times (negative pre-trigger) and is relative to the first row for
ISO-8601 times (``meta.extra["start_unix_ns"]`` holds the wall clock of the first row).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from .._edges import ChannelEdges, build_edge_trace, changes_to_edges
from ..errors import TraceCorruptError, TraceFormatError, diagnostic, handle_corrupt, validate_on_corrupt
from ..model import Diagnostic, Severity, Trace
from .sniff import sniff_csv  # noqa: F401 (re-exported)

#: at most 19 integer digits: longer numbers are out of range anyway (and would reach int()'s limit)
_REL_RE = re.compile(r"^([+-]?)(\d{1,19})(?:\.(\d*))?$")
_ISO_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
                     r"(Z|[+-]\d{2}:?\d{2})?$")
_FRAC_RE = re.compile(r"\.(\d+)")


def parse_time_ns(s: str) -> tuple[int, bool] | None:
    """``(ns, is_iso)`` for a relative-seconds or ISO-8601 time string; None if neither.

    >>> parse_time_ns("-0.003922800"), parse_time_ns("1.5")
    ((-3922800, False), (1500000000, False))
    >>> parse_time_ns("1970-01-01T00:00:01.000000002+00:00")
    (1000000002, True)
    """
    m = _REL_RE.match(s)
    if m:
        sign, whole, frac = m.group(1), m.group(2), (m.group(3) or "")
        ns = int(whole) * 1_000_000_000 + (int((frac + "000000000")[:9]) if frac else 0)
        if len(frac) > 9 and int(frac[9]) >= 5:
            ns += 1
        return (-ns if sign == "-" else ns), False
    m = _ISO_RE.match(s)
    if not m:
        return None
    y, mo, d, hh, mi, ss = (int(m.group(i)) for i in range(1, 7))
    frac = m.group(7) or ""
    tz = m.group(8)
    off = timedelta(0)
    if tz and tz != "Z":
        sign = -1 if tz[0] == "-" else 1
        tzs = tz[1:].replace(":", "")
        off = sign * timedelta(hours=int(tzs[:2]), minutes=int(tzs[2:]))
    try:
        dt = datetime(y, mo, d, hh, mi, ss, tzinfo=timezone(off))
        secs = int(dt.timestamp())
    except (ValueError, OverflowError):  # e.g. year 0, month 13, a time before year 1 in UTC
        return None
    return secs * 1_000_000_000 + (int((frac + "000000000")[:9]) if frac else 0), True


def read_saleae_csv(path: str | Path, *, on_corrupt: str = "raise", samplerate: int | None = None,
                    **_ignored: Any) -> Trace:
    """Read a Saleae Logic 2 digital CSV export into a :class:`~trace_parsers.model.Trace`.

    ``on_corrupt`` applies to rows that cannot be parsed and to times that go backwards
    (``CSV_BAD_ROW``, ``CSV_NON_MONOTONIC``): raise naming the row and byte offset, or keep the
    edges before it with a DATA_LOSS diagnostic.
    """
    on_corrupt = validate_on_corrupt(on_corrupt)
    p = str(path)
    try:
        raw = Path(p).read_bytes()
    except OSError as e:
        raise TraceFormatError(f"cannot read the file: {e.strerror}", code="IO_ERROR", path=p) from None
    diags: list[Diagnostic] = []
    lines = raw.split(b"\n")
    off = 3 if raw.startswith(b"\xef\xbb\xbf") else 0
    header = lines[0][off:].decode("utf-8", "replace").strip().split(",")
    if not header or header[0].strip() != "Time [s]" or len(header) < 2:
        raise TraceFormatError(f"expected a digital CSV header 'Time [s],<channel>,...', found "
                               f"{','.join(header)[:80]!r}", code="CSV_BAD_ROW", path=p, offset=0)
    names = [h.strip() for h in header[1:]]
    nch = len(names)
    off = len(lines[0]) + 1  # lines[0] includes the byte-order mark, if any
    times: list[int] = []
    rows: list[list[int]] = []
    no_data = 0
    iso_mode: bool | None = None
    decimals = 0  # most fractional-second digits of any time: the file's time resolution
    data_off: int | None = None
    prev = None
    last = [0] * nch
    for rowno, line in enumerate(lines[1:], 2):
        line_off = off
        off += len(line) + 1
        s = line.decode("utf-8", "replace").strip()
        if not s:
            continue
        cells = s.split(",")
        parsed = parse_time_ns(cells[0].strip())
        err = None
        if len(cells) != nch + 1:
            err = f"row {rowno}: expected {nch + 1} columns, found {len(cells)}"
        elif parsed is None:
            err = f"row {rowno}: cannot parse the time {cells[0]!r} (seconds or ISO-8601 expected)"
        elif abs(parsed[0]) > 1 << 62:
            err = f"row {rowno}: time {cells[0]!r} is out of range"
        elif iso_mode is not None and parsed[1] != iso_mode:
            err = f"row {rowno}: mixes ISO-8601 and relative times"
        if err is None:
            vals = []
            for k, c in enumerate(cells[1:]):
                c = c.strip()
                if c == "1" or c == "0":
                    vals.append(int(c))
                elif c in ("X", "x", ""):
                    no_data += 1
                    vals.append(last[k])
                else:
                    err = f"row {rowno}: value {c!r} in column {names[k]!r} (expected 0, 1 or X)"
                    break
        if err is not None:
            handle_corrupt(TraceCorruptError(err, code="CSV_BAD_ROW", path=p, offset=line_off),
                           on_corrupt, diags)
            break
        assert parsed is not None
        t, iso = parsed
        iso_mode = iso
        if prev is not None and t < prev:
            handle_corrupt(TraceCorruptError(
                f"row {rowno}: time {cells[0]!r} is earlier than the previous row's "
                f"({prev} ns > {t} ns)", code="CSV_NON_MONOTONIC", path=p, offset=line_off),
                on_corrupt, diags)
            break
        prev = t
        frac = _FRAC_RE.search(cells[0])
        decimals = max(decimals, len(frac.group(1)) if frac else 0)
        if data_off is None:
            data_off = line_off
        times.append(t)
        rows.append(vals)
        last = vals
    if not times:
        raise TraceFormatError("the CSV has a header but no data rows", code="CSV_BAD_ROW", path=p,
                               offset=min(off, len(raw)))
    if no_data:
        diags.append(diagnostic("CSV_BAD_ROW", 0, f"{no_data} 'X' (no data) cell(s) kept the previous "
                                "level", count=no_data, severity=Severity.NOTICE))
    t_ns = np.asarray(times, dtype=np.int64)
    first = int(t_ns[0])
    rel = t_ns - first
    if samplerate:
        rate = int(samplerate)
        if not 0 < rate < 4_000_000_000 or max(abs(int(rel[-1])), abs(first)) * rate >= 10**9 << 62:
            raise TraceFormatError(f"samplerate={samplerate!r}: expected 1 Hz .. 4 GHz and a capture "
                                   "span that fits int64 ticks", code="BAD_OPTION", path=p, offset=0)
        q, r = np.divmod(rel, 1_000_000_000)  # exact without int64 overflow of rel * rate
        ticks = q * rate + (r * rate + 500_000_000) // 1_000_000_000
        first_tick = (first * rate + 500_000_000) // 1_000_000_000
    else:
        rate = 1_000_000_000  # the time unit (ns), not a sample rate: none is stated or assumed
        ticks = rel
        first_tick = first
        res = 10 ** (9 - min(decimals, 9))
        diags.append(diagnostic(
            "SALEAE_NO_SAMPLERATE", data_off or 0,
            f"the CSV states no sample rate: times are kept exactly as written, in ns ({decimals} "
            f"decimals: {res} ns resolution), not counted in samples; pass samplerate= "
            "(crosstrace --samplerate HZ) to count samples"))
    levels = np.asarray(rows, dtype=np.int8)
    chans = []
    for k, name in enumerate(names):
        init, edges = changes_to_edges(ticks, levels[:, k])
        chans.append(ChannelEdges(k, name, init, edges))
    extra: dict[str, Any] = {"rows": len(times), "time_format": "iso8601" if iso_mode else "seconds",
                             "samplerate_given": bool(samplerate),
                             "samplerate_source": "option" if samplerate else None,
                             "time_resolution_ns": 10 ** (9 - min(decimals, 9))}
    if not samplerate:  # ticks are ns, not samples (``total_samples`` is the span in ticks)
        extra.update(samplerate=None, sample_period_ns=None)
    if iso_mode:
        extra["start_unix_ns"] = first
        first_tick = 0
    else:
        extra["first_row_time_ns"] = first
    return build_edge_trace(chans, source_format="saleae_csv", path=p, tick_hz=rate,
                            total_ticks=int(ticks[-1]), diagnostics=diags, extra=extra,
                            first_tick=int(first_tick), origin_raw=-int(first_tick))
