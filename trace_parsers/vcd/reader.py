"""``read_vcd``: VCD files (sigrok ``-O vcd``, ChronoVu, GTKWave-style, the QEMU virtual logic analyzer).

Accepted (``logic-captures.md`` §4): ``$timescale`` (``1 us``, ``10ns``, ``100 ps`` …) — the tick rate
is ``1 / timescale``; one-bit ``$var`` declarations (``wire``/``reg``/…), with names of several tokens
joined by a space (sigrok writes ``Pin 1`` unescaped) and scope prefixes only when two variables
share a name; ``$dumpvars`` blocks, ``#0`` repeats and other records that repeat the current level
are not edges; ``x``/``z`` keep the previous level and are counted in a NOTICE diagnostic; vectors
(``b…``) and reals (``r…``) are skipped with a NOTICE; lines that are not VCD (sigrok prints analog
values into mixed-capture VCDs) are skipped with a NOTICE.  The last timestamp (sigrok's bare
``#N`` end marker) is the capture length.

``ts_raw`` is the VCD time in timescale units; with ``samplerate=`` times are converted to sample
indices ``round(t * samplerate / tick_hz)`` (sigrok's VCDs use a timescale finer than the rate).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from .._edges import ChannelEdges, build_edge_trace, changes_to_edges
from ..errors import TraceCorruptError, TraceFormatError, diagnostic, handle_corrupt, validate_on_corrupt
from ..model import Diagnostic, Severity, Trace

_UNIT_HZ = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9, "ps": 10**12, "fs": 10**15}
_TS_RE = re.compile(r"^\s*(1|10|100)\s*(s|ms|us|ns|ps|fs)\s*$")
_MAX_TIME = 1 << 62
_KEYWORDS = (b"$date", b"$version", b"$timescale", b"$scope", b"$var", b"$upscope",
             b"$enddefinitions", b"$comment", b"$dumpvars")


def sniff(head: bytes, path: Path) -> bool:
    """Text starting with a VCD section keyword (after whitespace)."""
    h = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return h.startswith(_KEYWORDS)


class _Var:
    __slots__ = ("index", "name", "scope", "times", "levels", "unknown")

    def __init__(self, index: int, name: str, scope: str) -> None:
        self.index = index
        self.name = name
        self.scope = scope
        self.times: list[int] = []
        self.levels: list[int] = []
        self.unknown = 0


def read_vcd(path: str | Path, *, on_corrupt: str = "raise", samplerate: int | None = None,
             **_ignored: Any) -> Trace:
    """Read a VCD file into a :class:`~trace_parsers.model.Trace` of edge events.

    ``samplerate`` (Hz) converts VCD times into sample indices of that rate; without it the tick
    rate is ``1 / $timescale``.  ``on_corrupt`` applies to a body that cannot be parsed (times going
    backwards, a change for an undeclared identifier): raise, or keep the edges before it.
    """
    on_corrupt = validate_on_corrupt(on_corrupt)
    p = str(path)
    try:
        data = Path(p).read_bytes()
    except OSError as e:
        raise TraceFormatError(f"cannot read the file: {e.strerror}", code="IO_ERROR", path=p) from None
    diags: list[Diagnostic] = []
    text = data.decode("utf-8", "replace")
    # -- header ---------------------------------------------------------------------------------
    end_def = text.find("$enddefinitions")
    if end_def < 0:
        raise TraceFormatError("expected '$enddefinitions' ending the VCD header, found none",
                               code="VCD_BAD_SYNTAX", path=p, offset=0)
    body_start = text.find("$end", end_def + len("$enddefinitions"))
    if body_start < 0:
        raise TraceFormatError("'$enddefinitions' is not closed by '$end'", code="VCD_BAD_SYNTAX",
                               path=p, offset=end_def)
    body_start += len("$end")
    header = text[:end_def]
    tick_hz, timescale = _timescale(header, p)
    ids: dict[str, list[_Var]] = {}
    allvars: list[_Var] = []
    skipped_vectors: list[str] = []
    scope: list[str] = []
    for m in re.finditer(r"\$(scope|upscope|var)\b(.*?)\$end", header, re.S):
        kind, body = m.group(1), m.group(2).split()
        if kind == "scope":
            scope.append(body[1] if len(body) > 1 else (body[0] if body else ""))
        elif kind == "upscope":
            if scope:
                scope.pop()
        else:
            if len(body) < 4:
                raise TraceFormatError(f"malformed $var declaration {m.group(0)!r}",
                                       code="VCD_BAD_SYNTAX", path=p, offset=m.start())
            size, ident, ref = body[1], body[2], " ".join(body[3:])
            if size != "1":
                skipped_vectors.append(ref)
                ids.setdefault(ident, [])
                continue
            v = _Var(len(allvars), ref, ".".join(scope))
            allvars.append(v)
            ids.setdefault(ident, []).append(v)
    names = [v.name for v in allvars]
    for v in allvars:
        if names.count(v.name) > 1 and v.scope:
            v.name = f"{v.scope}.{v.name}"
    if skipped_vectors:
        diags.append(diagnostic("VCD_BAD_SYNTAX", 0, f"{len(skipped_vectors)} multi-bit variable(s) "
                                f"skipped: {', '.join(skipped_vectors[:8])}",
                                count=len(skipped_vectors), severity=Severity.NOTICE))
    # -- body -----------------------------------------------------------------------------------
    now = 0
    last_time = 0
    junk_lines = 0
    off = len(text[:body_start].encode("utf-8", "replace"))
    body = text[body_start:]
    pos_bytes = off
    damaged = False
    in_comment = False
    for line in body.splitlines(keepends=True):
        line_off = pos_bytes
        pos_bytes += len(line.encode("utf-8", "replace")) if not line.isascii() else len(line)
        toks = line.split()
        if not toks:
            continue
        i = 0
        bad = False
        while i < len(toks):
            t = toks[i]
            c = t[0]
            if in_comment:
                if t == "$end":
                    in_comment = False
                i += 1
                continue
            if c == "#":
                try:
                    tnew = int(t[1:])
                except ValueError:
                    bad = True
                    break
                if tnew < now or tnew > _MAX_TIME:
                    err = TraceCorruptError(
                        f"timestamp #{tnew} goes backwards (previous #{now}) or is out of range, "
                        f"at byte 0x{line_off:x}", code="VCD_BAD_SYNTAX", path=p, offset=line_off)
                    handle_corrupt(err, on_corrupt, diags)
                    damaged = True
                    break
                now = tnew
                last_time = max(last_time, now)
                i += 1
            elif c in "01xXzZ" and len(t) > 1:
                vs = ids.get(t[1:])
                if vs is None:
                    err = TraceCorruptError(f"value change for undeclared identifier {t[1:]!r}",
                                            code="VCD_BAD_SYNTAX", path=p, offset=line_off)
                    handle_corrupt(err, on_corrupt, diags)
                    damaged = True
                    break
                for v in vs:
                    if c in "01":
                        v.times.append(now)
                        v.levels.append(1 if c == "1" else 0)
                    else:
                        v.unknown += 1
                i += 1
            elif c in "bBrR":
                if i + 1 < len(toks) and c in "bB":
                    vs = ids.get(toks[i + 1], [])
                    bits = t[1:].lstrip("0") or "0"
                    for v in vs:  # a one-bit variable written as a vector
                        if bits in ("0", "1"):
                            v.times.append(now)
                            v.levels.append(int(bits))
                        else:
                            v.unknown += 1
                i += 2
            elif c == "$":
                if t == "$comment":
                    in_comment = True
                i += 1  # $dumpvars/$dumpon/$dumpoff/$dumpall/$end
            else:
                bad = True
                break
        if damaged:
            break
        if bad:
            junk_lines += 1
    if junk_lines:
        diags.append(diagnostic("VCD_BAD_SYNTAX", 0, f"{junk_lines} line(s) that are not VCD skipped "
                                "(e.g. analog values printed by sigrok)", count=junk_lines,
                                severity=Severity.NOTICE))
    unknown = sum(v.unknown for v in allvars)
    if unknown:
        diags.append(diagnostic("VCD_BAD_SYNTAX", 0, f"{unknown} 'x'/'z' value(s) kept the previous "
                                "level", count=unknown, severity=Severity.NOTICE))
    rate = tick_hz
    scale_num, scale_den = 1, 1
    if samplerate:
        if not tick_hz:
            raise TraceFormatError("cannot convert to samples: the timescale is not an integer rate",
                                   code="VCD_BAD_SYNTAX", path=p, offset=0)
        rate = int(samplerate)
        scale_num, scale_den = rate, tick_hz
    chans = []
    for v in allvars:
        tv = np.asarray(v.times, dtype=np.int64)
        if scale_num != scale_den:
            tv = (tv * scale_num + scale_den // 2) // scale_den
        init, ev = changes_to_edges(tv, np.asarray(v.levels, dtype=np.int8))
        chans.append(ChannelEdges(v.index, v.name, init, ev))
    total = last_time
    if scale_num != scale_den:
        total = (total * scale_num + scale_den // 2) // scale_den
    extra = {"timescale": timescale, "vcd_tick_hz": tick_hz}
    return build_edge_trace(chans, source_format="vcd", path=p, tick_hz=rate, total_ticks=total,
                            diagnostics=diags, extra=extra)


def _timescale(header: str, p: str) -> tuple[int | None, str]:
    m = re.search(r"\$timescale\b(.*?)\$end", header, re.S)
    if not m:
        return 10**9, "1 ns (default)"
    ts = " ".join(m.group(1).split())
    mm = _TS_RE.match(ts)
    if not mm:
        raise TraceFormatError(f"$timescale {ts!r}: expected 1, 10 or 100 followed by s, ms, us, ns, "
                               "ps or fs", code="VCD_BAD_SYNTAX", path=p, offset=m.start())
    num, unit = int(mm.group(1)), mm.group(2)
    hz = _UNIT_HZ[unit]
    return (hz // num if hz % num == 0 else None), ts
