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
from typing import TYPE_CHECKING, Any

from .._meta import Diagnostic, Severity
from .._numbers import MAX_RATE_HZ, parse_uint, rate_ok
from ..errors import TraceCorruptError, TraceFormatError, diagnostic, handle_corrupt, validate_on_corrupt
from . import sniff  # noqa: F401 (re-exported)

if TYPE_CHECKING:  # pragma: no cover - NumPy is imported on use (a small `info` parses without it)
    import numpy as np

    from .._edges import ChannelEdges
    from ..model import Trace

_UNIT_HZ = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9, "ps": 10**12, "fs": 10**15}
_TS_RE = re.compile(r"^\s*(1|10|100)\s*(s|ms|us|ns|ps|fs)\s*$")
_MAX_TIME = 1 << 62


class _Var:
    __slots__ = ("index", "name", "scope", "times", "levels", "unknown")

    def __init__(self, index: int, name: str, scope: str) -> None:
        self.index = index
        self.name = name
        self.scope = scope
        self.times: list[int] | np.ndarray = []
        self.levels: list[int] | np.ndarray = []
        self.unknown = 0


def read_vcd(path: str | Path, *, on_corrupt: str = "raise", samplerate: int | None = None,
             **_ignored: Any) -> Trace:
    """Read a VCD file into a :class:`~trace_parsers.model.Trace` of edge events.

    ``samplerate`` (Hz) converts VCD times into sample indices of that rate; without it the tick
    rate is ``1 / $timescale``.  ``on_corrupt`` applies to a body that cannot be parsed (times going
    backwards, a change for an undeclared identifier): raise, or keep the edges before it.
    """
    from .._edges import build_edge_trace

    channels, edge_kwargs = decode_vcd(path, on_corrupt=on_corrupt, samplerate=samplerate)
    return build_edge_trace(channels, **edge_kwargs)


def decode_vcd(path: str | Path, *, on_corrupt: str = "raise",
               samplerate: int | None = None) -> tuple[list[ChannelEdges], dict[str, Any]]:
    """The decode core of :func:`read_vcd`: every channel's edges (:class:`ChannelEdges`) and the
    keywords of :func:`~trace_parsers._edges.build_edge_trace` that turn them into the trace."""
    import numpy as np

    from .._edges import ChannelEdges, changes_to_edges, rescale_ticks

    allvars, scale, edge_kwargs = parse_vcd(path, on_corrupt=on_corrupt, samplerate=samplerate)
    chans = []
    for v in allvars:
        tv = np.asarray(v.times, dtype=np.int64)
        if scale[0] != scale[1]:
            tv = rescale_ticks(tv, *scale)
        init, ev = changes_to_edges(tv, np.asarray(v.levels, dtype=np.int8))
        chans.append(ChannelEdges(v.index, v.name, init, ev))
    return chans, edge_kwargs


def parse_vcd(path: str | Path, *, on_corrupt: str = "raise", samplerate: int | None = None,
              vectorised: bool = True) -> tuple[list[_Var], tuple[int, int], dict[str, Any]]:
    """The parse of :func:`decode_vcd`: the one-bit variables with their change lists, the
    ``(num, den)`` from VCD times to ticks, and the keywords of ``build_edge_trace``.
    ``vectorised=False``: the body is parsed line by line without NumPy (same result)."""
    on_corrupt = validate_on_corrupt(on_corrupt)
    p = str(path)
    try:
        data = Path(p).read_bytes()
    except OSError as e:
        raise TraceFormatError(f"cannot read the file: {e.strerror}", code="IO_ERROR", path=p) from None
    diags: list[Diagnostic] = []
    body_start = header_end(data, p)
    tick_hz, timescale, ids, allvars = parse_header(data[:body_start], p, diags)
    cut = _cut_line(data)
    off = body_start
    # undecodable bytes become lone surrogates (one character per byte), so that byte offsets can be
    # recomputed exactly with _nbytes(); names are cleaned with _clean() before they reach the model
    body = data[body_start:].decode("utf-8", "surrogateescape")
    if cut is not None and cut[0] >= off:  # the file ends inside a line: that line is not parsed
        body = body[:len(body) - cut[1]]
    st = BodyState(p, on_corrupt, diags, vectorised=vectorised)
    st.parse(body, off, ids)
    st.finish(cut, len(data), allvars)
    rate, scale = sample_scale(tick_hz, samplerate, p)
    extra = {"timescale": timescale, "vcd_tick_hz": tick_hz}
    return allvars, scale, dict(source_format="vcd", path=p, tick_hz=rate,
                       total_ticks=scaled_total(st.last_time, scale), diagnostics=diags, extra=extra)


def header_end(data: bytes, p: str) -> int:
    """Byte offset of the body: just after the ``$end`` closing ``$enddefinitions``."""
    end_def = data.find(b"$enddefinitions")
    if end_def < 0:
        raise TraceFormatError("expected '$enddefinitions' ending the VCD header, found none",
                               code="VCD_BAD_SYNTAX", path=p, offset=0)
    body_start = data.find(b"$end", end_def + len(b"$enddefinitions"))
    if body_start < 0:
        raise TraceFormatError("'$enddefinitions' is not closed by '$end'", code="VCD_BAD_SYNTAX",
                               path=p, offset=end_def)
    return body_start + len(b"$end")


def parse_header(head: bytes, p: str, diags: list[Diagnostic]
                 ) -> tuple[int | None, str, dict[str, list[_Var]], list[_Var]]:
    """Tick rate, timescale text, identifier -> variables and the one-bit variables of the header
    bytes ``head`` (up to the body); a NOTICE for skipped vectors goes to ``diags``."""
    text = head.decode("utf-8", "surrogateescape")
    header = text[:text.find("$enddefinitions")]
    tick_hz, timescale = _timescale(header, p)
    ids: dict[str, list[_Var]] = {}
    allvars: list[_Var] = []
    skipped_vectors: list[str] = []
    scope: list[str] = []
    for m in re.finditer(r"\$(scope|upscope|var)\b(.*?)\$end", header, re.S):
        kind, body = m.group(1), m.group(2).split()
        if kind == "scope":
            scope.append(_clean(body[1] if len(body) > 1 else (body[0] if body else "")))
        elif kind == "upscope":
            if scope:
                scope.pop()
        else:
            if len(body) < 4:
                raise TraceFormatError(f"malformed $var declaration {_clean(m.group(0))[:80]!r}",
                                       code="VCD_BAD_SYNTAX", path=p, offset=_nbytes(text[:m.start()]))
            size, ident, ref = body[1], body[2], _clean(" ".join(body[3:]))
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
    return tick_hz, timescale, ids, allvars


def sample_scale(tick_hz: int | None, samplerate: int | None, p: str) -> tuple[int | None, tuple[int, int]]:
    """The trace's tick rate and the ``(num, den)`` that turns VCD times into its ticks."""
    if not samplerate:
        return tick_hz, (1, 1)
    if not tick_hz:
        raise TraceFormatError("cannot convert to samples: the timescale is not an integer rate",
                               code="VCD_BAD_SYNTAX", path=p, offset=0)
    rate = int(samplerate)
    if not rate_ok(rate):
        raise ValueError(f"Invalid value for the 'samplerate' parameter: expected 1 .. {MAX_RATE_HZ} "
                         f"Hz, but got {samplerate!r} instead.")
    return rate, (rate, tick_hz)


def scaled_total(last_time: int, scale: tuple[int, int]) -> int:
    num, den = scale
    return last_time if num == den else (last_time * num + den // 2) // den  # Python int: exact


class BodyState:
    """Parse state of the body, carried from one piece of text to the next (the whole read parses
    one piece; the chunked read parses blocks that start at a line)."""

    def __init__(self, p: str, on_corrupt: str, diags: list[Diagnostic], *, vectorised: bool = True) -> None:
        self.p, self.on_corrupt, self.diags = p, on_corrupt, diags
        self.vectorised = vectorised  #: False: never the NumPy tokenizer (_fast_body)
        self.now = 0
        self.last_time = 0
        self.junk_lines = 0
        self.in_comment = False
        self.damaged = False

    def parse(self, body: str, off: int, ids: dict[str, list[_Var]]) -> None:
        """Append the changes of ``body`` (text from file offset ``off``) to the variables."""
        fast = (_fast_body(body, ids, self.now) if self.vectorised and body.isascii()
                and not self.in_comment and not self.damaged else None)
        if fast is not None:
            self.now = self.last_time = max(self.last_time, fast)
            return
        if not self.damaged:
            self._general(body, off, ids)

    def _general(self, body: str, off: int, ids: dict[str, list[_Var]]) -> None:
        pos_bytes = off
        for line in body.splitlines(keepends=True):
            line_off = pos_bytes
            pos_bytes += _nbytes(line) if not line.isascii() else len(line)
            toks = line.split()
            if toks and self._line(toks, line_off, ids):
                return

    def _line(self, toks: list[str], line_off: int, ids: dict[str, list[_Var]]) -> bool:
        """One line's tokens; True when the body is damaged here (parsing stops)."""
        i = 0
        while i < len(toks):
            t = toks[i]
            c = t[0]
            if self.in_comment:
                if t == "$end":
                    self.in_comment = False
                i += 1
                continue
            if c == "#":
                tnew = parse_uint(t[1:])  # None for junk and for numbers beyond int64
                if tnew is None:
                    break
                if tnew < self.now or tnew > _MAX_TIME:
                    return self._damage(f"timestamp #{tnew} goes backwards (previous #{self.now}) or is "
                                        f"out of range, at byte 0x{line_off:x}", line_off)
                self.now = tnew
                self.last_time = max(self.last_time, tnew)
                i += 1
            elif c in "01xXzZ" and len(t) > 1:
                vs = ids.get(t[1:])
                if vs is None:
                    return self._damage(f"value change for undeclared identifier {t[1:]!r}", line_off)
                for v in vs:
                    if c in "01":
                        v.times.append(self.now)  # type: ignore[union-attr]
                        v.levels.append(1 if c == "1" else 0)  # type: ignore[union-attr]
                    else:
                        v.unknown += 1
                i += 1
            elif c in "bBrR":
                if i + 1 < len(toks) and c in "bB":
                    bits = t[1:].lstrip("0") or "0"
                    for v in ids.get(toks[i + 1], []):  # a one-bit variable written as a vector
                        if bits in ("0", "1"):
                            v.times.append(self.now)  # type: ignore[union-attr]
                            v.levels.append(int(bits))  # type: ignore[union-attr]
                        else:
                            v.unknown += 1
                i += 2
            elif c == "$":
                if t == "$comment":
                    self.in_comment = True
                i += 1  # $dumpvars/$dumpon/$dumpoff/$dumpall/$end
            else:
                break
        else:
            return False
        self.junk_lines += 1  # a token that is not VCD: the rest of the line is skipped
        return False

    def _damage(self, message: str, offset: int) -> bool:
        handle_corrupt(TraceCorruptError(message, code="VCD_BAD_SYNTAX", path=self.p, offset=offset),
                       self.on_corrupt, self.diags)
        self.damaged = True
        return True

    def finish(self, cut: tuple[int, int] | None, size: int, allvars: list[_Var], unknown: int | None = None
               ) -> None:
        """The diagnostics of the end of the body (``unknown``: the x/z count when the variables
        no longer hold it)."""
        if cut is not None and not self.damaged:
            handle_corrupt(TraceCorruptError(
                f"the file ends inside a line (no line end after the last {cut[1]} characters at "
                f"0x{cut[0]:x}): it was probably cut; that incomplete line is ignored and later data is "
                "missing", code="TRUNCATED", path=self.p, offset=cut[0]), self.on_corrupt, self.diags)
        elif self.in_comment and not self.damaged:
            handle_corrupt(TraceCorruptError("the file ends inside a $comment (no closing $end): it was "
                                             "probably cut", code="TRUNCATED", path=self.p, offset=size),
                           self.on_corrupt, self.diags)
        if self.junk_lines:
            self.diags.append(diagnostic("VCD_BAD_SYNTAX", 0, f"{self.junk_lines} line(s) that are not VCD "
                                         "skipped (e.g. analog values printed by sigrok)",
                                         count=self.junk_lines, severity=Severity.NOTICE))
        unknown = sum(v.unknown for v in allvars) if unknown is None else unknown
        if unknown:
            self.diags.append(diagnostic("VCD_BAD_SYNTAX", 0, f"{unknown} 'x'/'z' value(s) kept the "
                                         "previous level", count=unknown, severity=Severity.NOTICE))


def _nbytes(s: str) -> int:
    """Byte length in the file of text decoded with ``surrogateescape``."""
    return len(s.encode("utf-8", "surrogateescape"))


def _clean(s: str) -> str:
    """Text for the model: undecodable bytes (lone surrogates) shown as U+FFFD."""
    return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace") if not s.isascii() else s


def _cut_line(data: bytes) -> tuple[int, int] | None:
    """``(offset, characters)`` of an incomplete last line (no line end, not blank), else None."""
    nl = data.rfind(b"\n") + 1
    tail = data[nl:]
    if not tail.strip():
        return None
    return nl, len(tail.decode("utf-8", "surrogateescape"))


def _timescale(header: str, p: str) -> tuple[int | None, str]:
    m = re.search(r"\$timescale\b(.*?)\$end", header, re.S)
    if not m:
        return 10**9, "1 ns (default)"
    ts = " ".join(m.group(1).split())
    mm = _TS_RE.match(ts)
    if not mm:
        raise TraceFormatError(f"$timescale {ts!r}: expected 1, 10 or 100 followed by s, ms, us, ns, "
                               "ps or fs", code="VCD_BAD_SYNTAX", path=p,
                               offset=_nbytes(header[:m.start()]))
    num, unit = int(mm.group(1)), mm.group(2)
    hz = _UNIT_HZ[unit]
    return (hz // num if hz % num == 0 else None), ts


_DOLLAR_OK = {b"$dumpvars", b"$end", b"$dumpon", b"$dumpoff", b"$dumpall"}


def _fast_body(body: str, ids: dict[str, list[_Var]], now: int = 0) -> int | None:
    """Vectorised parse of a plain VCD body (``#t`` and scalar ``0/1/x/z<id>`` tokens only).

    Fills the variables' ``times``/``levels``/``unknown`` (changes before the first ``#`` are at
    ``now``, the time reached before this text) and returns the last timestamp, or returns
    None (touching nothing) when the body needs the general parser: vectors, reals, comments,
    non-VCD text, unknown or aliased identifiers, identifiers longer than 8 characters, times going
    backwards.  About 20x faster than the token loop on large files.
    """
    import numpy as np

    raw = body.encode("ascii")
    if not raw.strip():
        return now
    arr = np.frombuffer(raw, np.uint8)
    # token boundaries: whitespace (any byte <= 0x20 in ASCII text) <-> non-whitespace switches
    ws = np.empty(arr.size + 2, np.int8)
    ws[0] = ws[-1] = 1
    np.less_equal(arr, 32, out=ws[1:-1], casting="unsafe")
    bounds = np.flatnonzero(ws[1:] != ws[:-1])
    start, end = bounds[0::2], bounds[1::2]
    first = arr[start]
    length = end - start
    is_time = first == ord("#")
    is_dollar = first == ord("$")
    is_val = np.isin(first, np.frombuffer(b"01xXzZ", np.uint8))
    if not np.all(is_time | is_dollar | is_val):
        return None
    for k in np.flatnonzero(is_dollar).tolist():
        if raw[start[k]:end[k]] not in _DOLLAR_OK:
            return None
    # timestamps: up to 18 digits, parsed column by column
    ts_start, ts_len = start[is_time] + 1, length[is_time] - 1
    if ts_len.size and (ts_len.min() < 1 or ts_len.max() > 18):
        return None
    tval = np.zeros(ts_start.size, np.int64)
    for k in range(int(ts_len.max()) if ts_len.size else 0):
        has = ts_len > k
        d = arr[np.minimum(ts_start + k, arr.size - 1)].astype(np.int64) - 48
        if np.any(has & ((d < 0) | (d > 9))):
            return None
        tval = np.where(has, tval * 10 + d, tval)
    if tval.size and (tval[0] < now or (tval.size > 1 and np.any(np.diff(tval) < 0))):
        return None
    # identifiers of value tokens, packed into uint64 keys
    id_start, id_len = start[is_val] + 1, length[is_val] - 1
    if id_len.size and (id_len.min() < 1 or id_len.max() > 8):
        return None
    key = np.zeros(id_start.size, np.uint64)
    for k in range(int(id_len.max()) if id_len.size else 0):
        has = id_len > k
        b = arr[np.minimum(id_start + k, arr.size - 1)].astype(np.uint64)
        key = np.where(has, key * np.uint64(256) + b, key)
    known: dict[int, _Var] = {}
    for ident, vs in ids.items():
        if not vs:
            continue  # a skipped vector: its changes need the general parser
        if len(vs) > 1 or len(ident) > 8:
            return None
        kk = 0
        for ch in ident.encode("ascii", "replace"):
            kk = kk * 256 + ch
        known[kk] = vs[0]
    if not known:
        return None if id_len.size else int(tval[-1]) if tval.size else now
    kkeys = np.array(sorted(known), dtype=np.uint64)
    pos = np.searchsorted(kkeys, key)
    pos = np.minimum(pos, kkeys.size - 1)
    if np.any(kkeys[pos] != key):
        return None
    # time of each value token = the last '#' before it (0 before the first one)
    tok_idx = np.arange(start.size)
    last_t = np.maximum.accumulate(np.where(is_time, tok_idx, -1))
    time_of_tok = np.full(start.size, now, np.int64)
    tpos = np.cumsum(is_time) - 1  # index into tval of the latest '#'
    ok = last_t >= 0
    time_of_tok[ok] = tval[tpos[ok]]
    vt = time_of_tok[is_val]
    vfirst = first[is_val]
    known_level = (vfirst == ord("0")) | (vfirst == ord("1"))
    order = [known[int(k)] for k in kkeys.tolist()]
    for j, v in enumerate(order):
        sel = pos == j
        lv = sel & known_level
        v.times = vt[lv]  # arrays (the general path appends to lists): np.asarray takes both
        v.levels = (vfirst[lv] == ord("1")).view(np.int8)
        v.unknown = int(np.count_nonzero(sel & ~known_level))
    return int(tval[-1]) if tval.size else now
