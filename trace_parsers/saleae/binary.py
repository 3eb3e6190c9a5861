"""``read_saleae_binary``: Saleae Logic 2 binary export, digital, versions 0 and 1.

Layout (``logic-captures.md`` §5.2, little-endian): ``char[8] "<SALEAE>"; int32 version;
int32 type`` (0 = digital), then

* **v0**: ``uint32 initial_state; f64 begin_time; f64 end_time; uint64 n; f64 t[n]``;
* **v1**: ``uint64 chunk_count`` and per chunk ``uint32 initial_state; f64 sample_rate;
  f64 begin_time; f64 end_time; uint64 n; f64 t[n]`` — a gap between chunks is missing data
  (reported as a DATA_LOSS diagnostic and listed in ``meta.extra["gaps_ns"]``).

The level toggles at every transition time.  One file holds one channel (``digital_<N>.bin`` →
channel index N, name ``Channel N``); pass a directory to read every ``digital_*.bin`` in it as one
capture.  Times are float seconds from the app's origin (``begin_time`` may be negative); they are
converted to ticks of ``samplerate`` (argument), else of the v1 chunks' rate (one rate for every
channel).  A v0 export stores no sample rate at all (§5.2): then, as when v1 channels disagree on the
rate, nothing is assumed about it: times are rounded to ns (``tick_hz = 1e9`` is the time unit),
``meta.extra["samplerate"]`` is None and a ``SALEAE_NO_SAMPLERATE`` notice names the reason;
``extra["samplerate_source"]`` says where the rate came from (``option``, ``file`` or None).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from .._edges import ChannelEdges, build_edge_trace
from .._reader import ByteReader
from ..errors import TraceCorruptError, TraceFormatError, diagnostic, handle_corrupt, validate_on_corrupt
from ..model import Diagnostic, Severity, Trace
from .sniff import MAGIC, sniff_binary  # noqa: F401 (sniff_binary: re-exported)

_MAX_S = 1e9  #: largest |time| in seconds accepted from a file (int64 ns reach 9.2e9 s)
_NAME_RE = re.compile(r"digital_(\d+)\.bin$")


class _Chan:
    def __init__(self, index: int, name: str) -> None:
        self.index = index
        self.name = name
        self.initial = 0
        self.times: list[np.ndarray] = []  # transition times (s), in order
        self.begin = 0.0
        self.end = 0.0
        self.rate: float | None = None
        self.gaps: list[tuple[float, float]] = []
        self.version = 0


def _parse(path: Path, index: int, on_corrupt: Any, diags: list[Diagnostic]) -> _Chan:
    p = str(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise TraceFormatError(f"cannot read the file: {e.strerror}", code="IO_ERROR", path=p) from None
    r = ByteReader(data, p, code="SALEAE_BAD_BINARY")
    if data[:8] != MAGIC:
        raise TraceFormatError(f"expected the '<SALEAE>' magic at offset 0, found {data[:8]!r}",
                               code="SALEAE_BAD_BINARY", path=p, offset=0)
    version, typ = r.unpack("<ii", 8, "version and type")
    if typ in (100, 101):
        raise TraceFormatError("this is a channel file from inside a Logic 2 .sal save (type "
                               f"{typ}), not a binary export; export the capture from Logic 2 "
                               "(File > Export Data > Binary)", code="SALEAE_UNSUPPORTED", path=p,
                               offset=12)
    if typ != 0:
        raise TraceFormatError(f"type {typ} is not a digital export (expected 0; 1 = analog)",
                               code="SALEAE_BAD_BINARY", path=p, offset=12)
    ch = _Chan(index, f"Channel {index}")
    ch.version = version
    try:
        if version == 0:
            init, begin, end, n = r.unpack("<IddQ", 16, "the v0 digital header")
            ch.initial, ch.begin, ch.end = int(init) & 1, begin, end
            avail = (len(data) - 44) // 8
            if n > avail:
                ch.times.append(np.frombuffer(data, "<f8", avail, 44).copy())
                raise TraceCorruptError(f"expected {n} transition times from offset 0x2c, the file "
                                        f"holds {avail}", code="SALEAE_BAD_BINARY", path=p,
                                        offset=44 + 8 * avail)
            ch.times.append(np.frombuffer(data, "<f8", n, 44).copy())
        elif version == 1:
            (count,) = r.unpack("<Q", 16, "the v1 chunk count")
            off = 24
            level = None
            for k in range(count):
                init, rate, begin, end, n = r.unpack("<IdddQ", off, f"chunk {k} header")
                if not all(np.isfinite((rate, begin, end))) or max(abs(begin), abs(end)) >= _MAX_S:
                    raise TraceCorruptError(f"chunk {k}: implausible sample rate/begin/end time "
                                            f"({rate!r}, {begin!r}, {end!r}); expected finite times "
                                            f"within ±{_MAX_S:.0e} s", code="SALEAE_BAD_BINARY",
                                            path=p, offset=off)
                off += 36
                avail = max(0, (len(data) - off) // 8)
                t = np.frombuffer(data, "<f8", min(n, avail), off).copy()
                if k == 0:
                    ch.initial, ch.begin, ch.rate = int(init) & 1, begin, rate
                    level = ch.initial
                else:
                    if begin > ch.end:
                        ch.gaps.append((ch.end, begin))
                    if (int(init) & 1) != level:  # level changed while no data was recorded
                        t = np.concatenate(([begin], t))
                ch.times.append(t)
                level = (level ^ (len(ch.times[-1]) & 1)) if level is not None else None
                ch.end = end
                if n > avail:
                    raise TraceCorruptError(f"chunk {k}: expected {n} transition times from offset "
                                            f"0x{off:x}, the file holds {avail}",
                                            code="SALEAE_BAD_BINARY", path=p, offset=off + 8 * avail)
                off += 8 * n
        else:
            raise TraceFormatError(f"unsupported export version {version} (expected 0 or 1)",
                                   code="SALEAE_BAD_BINARY", path=p, offset=8)
    except TraceCorruptError as err:
        handle_corrupt(err, on_corrupt, diags)
    return ch


def _rate(chans: list[_Chan], samplerate: int | None,
          diags: list[Diagnostic]) -> tuple[int, str | None]:
    """``(ticks per second, where the rate came from)``: the option, the v1 chunks' one rate, or
    None (1 ns ticks, with a ``SALEAE_NO_SAMPLERATE`` notice saying why)."""
    if samplerate:
        return int(samplerate), "option"
    rates = {c.rate for c in chans if c.version >= 1 and c.rate}
    v0 = [c.name for c in chans if c.version == 0]
    if not v0 and len(rates) == 1:
        (r,) = rates
        if float(r).is_integer() and 0 < r < 1e13:
            return int(r), "file"
        why = f"the file's sample rate {r!r} Hz is not a whole number"
    elif v0:
        why = (f"a v0 export stores only transition times in float seconds, no sample rate "
               f"({', '.join(v0)})")
    elif rates:
        why = f"the channels state different sample rates ({', '.join(f'{r:g}' for r in sorted(rates))} Hz)"
    else:
        why = "the chunks state no sample rate"
    diags.append(diagnostic("SALEAE_NO_SAMPLERATE", 16, f"{why}: times are rounded to ns, not counted "
                            "in samples; pass samplerate= (crosstrace --samplerate HZ) to count samples"))
    return 1_000_000_000, None


def read_saleae_binary(path: str | Path, *, on_corrupt: str = "raise", samplerate: int | None = None,
                       **_ignored: Any) -> Trace:
    """Read one ``digital_<N>.bin`` export, or every ``digital_*.bin`` of a directory, as one trace."""
    on_corrupt = validate_on_corrupt(on_corrupt)
    base = Path(path)
    if base.is_dir():
        files = sorted((f for f in base.iterdir() if _NAME_RE.search(f.name)),
                       key=lambda f: int(_NAME_RE.search(f.name).group(1)))  # type: ignore[union-attr]
        if not files:
            raise TraceFormatError("expected digital_<N>.bin files in the directory, found none",
                                   code="SALEAE_BAD_BINARY", path=str(base))
    else:
        files = [base]
    diags: list[Diagnostic] = []
    chans = []
    for i, f in enumerate(files):
        m = _NAME_RE.search(f.name)
        chans.append(_parse(f, int(m.group(1)) if m else i, on_corrupt, diags))
    begin = min(c.begin for c in chans)
    end = max(c.end for c in chans)
    rate, source = _rate(chans, samplerate, diags)
    if not (np.isfinite(begin) and np.isfinite(end) and abs(begin) < _MAX_S and abs(end) < _MAX_S):
        raise TraceFormatError(f"implausible begin/end time ({begin!r}, {end!r} s)",
                               code="SALEAE_BAD_BINARY", path=str(path), offset=16)
    if not 0 < rate < 1e13:
        raise TraceFormatError(f"implausible sample rate {rate!r}", code="SALEAE_BAD_BINARY",
                               path=str(path), offset=16)
    out = []
    for c in chans:
        t = np.concatenate(c.times) if c.times else np.zeros(0)
        with np.errstate(over="ignore", invalid="ignore"):  # inf/nan are rejected just below
            good = np.isfinite(t) & (t >= begin) & (np.abs(t - begin) * rate < 2.0**62)
        if not np.all(good):
            bad = int(np.flatnonzero(~good)[0])
            handle_corrupt(TraceCorruptError(f"{c.name}: transition {bad} has an invalid time "
                                             f"{t[bad]!r} (begin_time {begin!r})",
                                             code="SALEAE_BAD_BINARY", path=str(path),
                                             offset=44 + 8 * bad), on_corrupt, diags)
            t = t[:bad]
        if np.any(np.diff(t) < 0):
            bad = int(np.flatnonzero(np.diff(t) < 0)[0]) + 1
            handle_corrupt(TraceCorruptError(f"{c.name}: transition {bad} goes back in time",
                                             code="SALEAE_BAD_BINARY", path=str(path), offset=44 + 8 * bad),
                           on_corrupt, diags)
            t = t[:bad]
        ticks = np.rint((t - begin) * rate).astype(np.int64)
        # transitions closer than one tick collapse; drop pairs that land on the same tick
        if ticks.size > 1 and np.any(np.diff(ticks) <= 0):
            keep = np.ones(ticks.size, bool)
            dup = np.flatnonzero(np.diff(ticks) <= 0)
            keep[dup] = False
            keep[dup + 1] = False
            diags.append(diagnostic("SALEAE_BAD_BINARY", 0, f"{c.name}: {dup.size} pulse(s) shorter "
                                    "than one tick dropped", count=int(dup.size),
                                    severity=Severity.DATA_LOSS))
            ticks = ticks[keep]
        out.append(ChannelEdges(c.index, c.name, c.initial, ticks))
        for g0, g1 in c.gaps:
            diags.append(diagnostic("SALEAE_BAD_BINARY", 0, f"{c.name}: no data from {g0:.9f} s to "
                                    f"{g1:.9f} s (gap between chunks)", severity=Severity.DATA_LOSS))
    first_tick = int(round(begin * rate))
    if abs((end - begin) * rate) >= 2.0**62 or abs(first_tick) >= 2**62:
        raise TraceFormatError(f"the capture span ({begin!r} .. {end!r} s at {rate} Hz) does not fit "
                               "int64 ticks", code="SALEAE_BAD_BINARY", path=str(path), offset=16)
    versions = sorted({c.version for c in chans})
    extra: dict[str, Any] = {
        "begin_time_s": begin, "end_time_s": end, "export_versions": versions,
        "files": [str(f) for f in files],
        "gaps_ns": [(int(round(g0 * 1e9)), int(round(g1 * 1e9))) for c in chans for g0, g1 in c.gaps],
        "samplerate_source": source}
    if source is None:  # ticks are ns, not samples (``total_samples`` is the span in ticks)
        extra.update(samplerate=None, sample_period_ns=None)
    return build_edge_trace(out, source_format="saleae_binary", path=str(files[0]), tick_hz=rate,
                            total_ticks=max(int(round((end - begin) * rate)),
                                            max((int(c.edges[-1]) + 1 for c in out if len(c.edges)),
                                                default=0)),
                            source_version=",".join(str(v) for v in versions),
                            diagnostics=diags, extra=extra, first_tick=first_tick,
                            origin_raw=-first_tick)
