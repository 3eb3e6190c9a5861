"""What ``crosstrace info`` shows of a small TraceX buffer, without NumPy.

The same steps as :func:`~trace_parsers.tracex.read_tracex` (:func:`.decode.decode_bytes` then
:func:`.convert.to_trace`), over Python tuples of the 32-byte records (``struct``) instead of NumPy
views: the header checks and the layout, text and conversion diagnostics come from
:mod:`._common`, shared with the decoder; the slot order, TraceX's direction vote, the timer
unrolling (with the estimate across a cut-out gap), the thread table ("Un-named Thread" pointers in
order of first appearance), the priorities, ISR numbers and event kinds are ported. The events are
counted per kind instead of becoming ``Trace.events``; the duration is the unrolled time of the
last event. The text encodings keep the converted bytes' file offsets as a lookup (records) or a
scan on demand (plain hex) instead of an offset array.
``tests/analyzers/test_info_small.py`` compares the result with the full read on every ``.trx`` of
the corpus and the captures, and on their text encodings.
"""

from __future__ import annotations

import binascii
import hashlib
import re
import struct
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._meta import Diagnostic, EventKind, Isr, Marker, Task, TraceMeta, int_ticks_to_ns
from ..errors import TraceFormatError, check_option, validate_on_corrupt
from ..summary import TraceSummary
from . import _read, hexfmt
from . import format as fmt
from ._common import (
    HEADER_STRUCT,
    conversion_diagnostics,
    decode_image,
    object_name,
    read_header,
    slot_diagnostics,
    stale_diagnostic,
    vote_drops,
)

_HEADER = HEADER_STRUCT  #: format.HEADER_FIELDS
_SPECIAL = {fmt.TX_TRACE_THREAD_RESUME: EventKind.TASK_READY,
            fmt.TX_TRACE_THREAD_SUSPEND: EventKind.TASK_BLOCK, fmt.TX_TRACE_ISR_ENTER: EventKind.ISR_ENTER,
            fmt.TX_TRACE_ISR_EXIT: EventKind.ISR_EXIT,
            fmt.TX_TRACE_TIME_SLICE: EventKind.OTHER, fmt.TX_TRACE_RUNNING: EventKind.TRACE_START}


def event_kind(eid: int) -> EventKind:
    """The kind of event id ``eid`` (low 16 bits): :func:`.convert._kind_table` for one id."""
    if eid >= fmt.TX_TRACE_USER_EVENT_START:
        return EventKind.MARK if eid - fmt.TX_TRACE_USER_EVENT_START in fmt.CT_SITES else EventKind.USER
    kind = _SPECIAL.get(eid)
    if kind is not None:
        return kind
    return EventKind.API_CALL if eid in fmt.EVENT_IDS else EventKind.OTHER


@dataclass
class _Text:
    """A text-encoded buffer as bytes, with the file offset of each converted byte on demand."""

    data: bytes
    kind: str
    cut: tuple[int, str] | None
    end: int
    starts: list[int] = field(default_factory=list)  #: records: output offset of each record
    bases: list[int] = field(default_factory=list)  #: records: file offset of its first data digit
    source: bytes = b""  #: plain hex: the text, scanned for the 2i-th digit

    def _digit(self, j: int) -> int:
        """File offset of the ``j``-th byte above 0x20 of a plain hex text."""
        seen = 0
        for m in re.finditer(rb"[^\x00-\x20]+", self.source):
            n = m.end() - m.start()
            if j < seen + n:
                return m.start() + j - seen
            seen += n
        raise IndexError(j)

    def offset_of(self, offset: int) -> int:
        """:meth:`.hexfmt.Converted.file_offset`."""
        if 0 <= offset < len(self.data):
            if self.kind == "hex":
                return self._digit(2 * offset)
            i = bisect_right(self.starts, offset) - 1
            return self.bases[i] + 2 * (offset - self.starts[i])
        return self.cut[0] if self.cut else self.end


def _convert(data: bytes, path: str | None) -> _Text | None:
    """:func:`.hexfmt.convert` without the offset array."""
    kind = hexfmt.detect(data)
    if kind is None:
        return None
    try:
        return _plain_hex(data) if kind == "hex" else _records(data, kind)
    except hexfmt._BadRecord as e:
        raise TraceFormatError(f"{hexfmt._NAMES[kind]} record on line {e.line} is malformed: {e.why}",
                               code="TRX_BAD_MAGIC", path=path, offset=e.offset) from None


_BLANK = bytes(range(0x21))


def _plain_hex(data: bytes) -> _Text:
    digits = data.translate(None, _BLANK)  # every byte above 0x20 must be a hex digit
    cut = None
    if len(digits) % 2:
        cut = (len(data.rstrip(_BLANK)) - 1, "an odd number of hex digits (the last byte is incomplete)")
        digits = digits[:-1]
    try:
        out = binascii.unhexlify(digits)
    except (binascii.Error, ValueError):
        bad = next((i for i, c in enumerate(data) if c not in hexfmt._HEXCHARS and not chr(c).isspace()), 0)
        raise hexfmt._BadRecord(data.count(b"\n", 0, bad) + 1, bad,
                                "expected pairs of hexadecimal digits") from None
    return _Text(out, "hex", cut, len(data), source=data)


def _records(data: bytes, kind: str) -> _Text:
    recs, bases, cut = hexfmt.scan_records(data, kind)
    text = _Text(b"".join(recs), kind, cut, len(data))
    size = 0
    for rec, base in zip(recs, bases):
        if rec:
            text.starts.append(size)
            text.bases.append(base)
            size += len(rec)
    return text


@dataclass
class _Raw:
    """What the summary needs of :class:`.decode.RawTrace`."""

    bo: str
    header: dict[str, int]
    objects: list[dict[str, Any]]
    events: list[tuple[int, ...]]  #: the eight words of every event, chronological
    slots: list[int]  #: slot number of every event
    buffer_offset: int
    layout: dict[str, Any]
    direction: str = "up"
    timer_wraps: int = 0
    last_tick: int = 0  #: relative time of the last event
    first_ts: int = 0  #: masked timestamp of the first event
    diagnostics: list[Diagnostic] = field(default_factory=list)
    src_offset: Callable[[int], int] = lambda off: off


def decode(data: bytes, path: str | None, timer: str, on_corrupt: str) -> _Raw:
    """:func:`.decode.decode_bytes` into a :class:`_Raw`."""
    check_option("timer", timer, ("auto", "up", "down"))
    validate_on_corrupt(on_corrupt)
    raw, conv = decode_image(data, path, convert=lambda d: _convert(d, path),
                             decode_binary=lambda b, enc: _binary(b, path, timer, on_corrupt, enc),
                             file_offset=lambda c, o: c.offset_of(o))
    if conv is None:
        return raw
    end = raw.buffer_offset + 32 * raw.layout["event_slots"]
    raw.layout["bytes_after_buffer_end"] = max(0, len(data) - end)  # past the end of the *text*
    last = len(conv.data) - 1
    raw.src_offset = lambda off: conv.offset_of(min(off, last))
    return raw


def _objects(data: bytes, bo: str, off: int, count: int, ns: int) -> list[dict[str, Any]]:
    out = []
    for i in range(count):
        at = off + i * (16 + ns)
        avail, type_, r1, r2, ptr, p1, p2 = struct.unpack_from(bo + "BBBBIII", data, at)
        if type_:
            name = object_name(data[at + 16:at + 16 + ns].split(b"\0", 1)[0])
            out.append({"slot": i, "type": type_, "type_name": fmt.object_type_name(type_), "name": name,
                        "address": ptr, "param_1": p1, "param_2": p2, "available": avail,
                        "reserved1": r1, "reserved2": r2})
    return out


def _binary(data: bytes, path: str | None, timer: str, on_corrupt: str, encoding: str = "binary") -> _Raw:
    diags: list[Diagnostic] = []
    size = len(data)
    bo, hdr = read_header(data, path, diags)
    base, ns = hdr["trace_base_address"], hdr["object_name_size"]
    n_reg = (hdr["registry_end_pointer"] - hdr["registry_start_pointer"]) // (16 + ns)
    objects = _objects(data, bo, hdr["registry_start_pointer"] - base, n_reg, ns)
    buf_off = hdr["buffer_start_pointer"] - base
    m = (hdr["buffer_end_pointer"] - hdr["buffer_start_pointer"]) // fmt.EVENT_SIZE
    avail = min(m, (size - buf_off) // fmt.EVENT_SIZE)
    slots = list(struct.iter_unpack(bo + "8I", data[buf_off:buf_off + avail * 32]))
    cur = (hdr["buffer_current_pointer"] - hdr["buffer_start_pointer"]) // fmt.EVENT_SIZE
    k = next((i for i, s in enumerate(slots) if s[0] == 0), avail)
    wrapped, ranges = slot_diagnostics(diags, path, on_corrupt, buf_off=buf_off, m=m, avail=avail, k=k,
                                       cur=cur, size=size)
    stale = sum(1 for s in slots[k + 1:] if any(s))
    if stale:
        diags.append(stale_diagnostic(stale, buf_off, k))
    order = [i for a, b in ranges for i in range(a, b)]
    layout = {
        "endianness": "little" if bo == "<" else "big", "encoding": encoding,
        "registry_slots": n_reg, "event_slots": m, "slots_in_file": avail, "current_index": cur,
        "first_null_slot": k if k < avail else None, "buffer_wrapped": wrapped, "stale_slots": stale,
        "bytes_after_buffer_end": max(0, size - buf_off - 32 * m),
        "timer_valid_mask": hdr["timer_valid_mask"]}
    raw = _Raw(bo, hdr, objects, [slots[i] for i in order], order, buf_off, layout, diagnostics=diags)
    gap = (k - cur, m - avail) if wrapped and cur > 0 and avail < m and k == avail else None
    _timestamps(raw, k, cur, wrapped, timer, gap)
    layout.update(timestamp_direction=raw.direction, timestamp_wraps=raw.timer_wraps)
    return raw


def _timestamps(raw: _Raw, k: int, cur: int, wrapped: bool, timer: str, gap: tuple[int, int] | None) -> None:
    """:func:`.decode._timestamps`: direction, wraps and the relative time of the last event."""
    mask = raw.header["timer_valid_mask"]
    ts = [e[3] & mask for e in raw.events]
    n = len(ts)
    d = [b - a for a, b in zip(ts, ts[1:])]
    if timer == "auto":
        drops = vote_drops(cur if wrapped else 0, k, n, wrapped)
        inc = sum(1 for x in d if x > 0) - sum(1 for p in drops if d[p] > 0)
        dec = sum(1 for x in d if x < 0) - sum(1 for p in drops if d[p] < 0)
        if inc == dec:  # TraceX would say "down"; break the tie on every chronological pair, then "up"
            inc = sum(1 for x in d if x > 0)
            dec = sum(1 for x in d if x < 0)
            inc += inc == dec
        raw.direction = "up" if inc > dec else "down"
    else:
        raw.direction = timer
    if n == 0:
        return
    raw.first_ts = ts[0]
    if raw.direction == "down":
        d = [-x for x in d]
    raw.timer_wraps = sum(1 for x in d if x < 0)
    if raw.timer_wraps:
        d = [x + mask + 1 if x < 0 else x for x in d]
    if gap is not None and 1 <= gap[0] <= len(d):
        p, period = gap[0] - 1, mask + 1
        others = [x for i, x in enumerate(d) if i != p and x > 0]
        if others:  # decode._bridge_gap
            expect = _median(others) * (gap[1] + 1)
            extra = max(0, round((expect - d[p]) / period))
            if extra:
                d[p] += extra * period
                raw.timer_wraps += extra
    raw.last_tick = sum(d)


def _median(values: list[int]) -> float:
    """``float(np.median(values))`` (``statistics`` imports ``random`` and ``decimal``: ~4 ms)."""
    s = sorted(values)
    h = len(s) // 2
    return float(s[h]) if len(s) % 2 else (s[h - 1] + s[h]) / 2


def _facts(raw: _Raw) -> tuple[list[Task], dict[int, int], set[int], int, dict[int, int], int]:
    """:func:`.convert.to_trace`'s side tables and counts: tasks, event ids -> count, ISR numbers,
    highest core, unnamed ids -> count and the source offset of the first unnamed event."""
    first: dict[int, dict[str, Any]] = {}
    for o in raw.objects:
        first.setdefault(o["address"], o)
    regs = [o for o in raw.objects
            if o["type"] == fmt.TX_TRACE_OBJECT_TYPE_THREAD and first[o["address"]] is o]
    index = {o["address"]: i for i, o in enumerate(regs)}
    names = [o["name"] for o in regs]
    prios: list[int | None] = [  # TrxObject.registry_priority
        ((o["reserved1"] & 0x3) << 8) | o["reserved2"] if o["reserved1"] & 0x80 else None for o in regs]
    first_prio: dict[int, int] = {}
    cores: dict[int, set[int]] = {}
    isrs: set[int] = set()
    isr_edge = (fmt.TX_TRACE_ISR_ENTER, fmt.TX_TRACE_ISR_EXIT)
    for ctx, prio, rid, _ts, _i1, i2, _i3, _i4 in raw.events:
        if ctx == fmt.CTX_ISR:
            if (rid & 0xFFFF) in isr_edge and i2 < 1 << 16:
                isrs.add(i2)
            continue
        if ctx == fmt.CTX_INIT or ctx == 0:
            continue
        t = index.get(ctx)
        if t is None:
            t = index[ctx] = len(names)
            names.append(f"Un-named Thread 0x{ctx:08X}")
            prios.append(None)
        if t not in first_prio:
            first_prio[t] = prio & 0x3FF
        cores.setdefault(t, set()).add(rid >> 24)
    ids = Counter(e[2] & 0xFFFF for e in raw.events)
    max_core = max((e[2] >> 24 for e in raw.events), default=0)
    unknown = {i: c for i, c in ids.items()
               if event_kind(i) == EventKind.OTHER and i != fmt.TX_TRACE_TIME_SLICE}
    first_unknown = -1
    if unknown:
        pos = next(j for j, e in enumerate(raw.events) if (e[2] & 0xFFFF) in unknown)
        first_unknown = raw.src_offset(raw.buffer_offset + 32 * raw.slots[pos])
    addrs = list(index)
    tasks = [Task(ctx_id=i, name=nm, priority=p if (p := prios[i]) is not None else first_prio.get(i, -1),
                  native_handle=addrs[i], core=next(iter(cs)) if len(cs := cores.get(i, set())) == 1 else -1)
             for i, nm in enumerate(names)]
    return tasks, ids, isrs, max_core, unknown, first_unknown


def summarize_tracex(path: str | Path, *, tick_hz: int | None = None, timer: str = "auto",
                     on_corrupt: str = "raise") -> TraceSummary:
    """The :class:`~trace_parsers.summary.TraceSummary` of ``read_tracex(path, ...)`` (``tick_hz``
    already checked: a positive int or None)."""
    data = _read(path)
    raw = decode(data, str(path), timer, on_corrupt)
    tasks, ids, isrs, max_core, unknown, first_unknown = _facts(raw)
    mask = raw.header["timer_valid_mask"]
    diags = list(raw.diagnostics) + conversion_diagnostics(
        mask=mask, timer_wraps=raw.timer_wraps, direction=raw.direction, buffer_offset=raw.buffer_offset,
        unknown_ids=unknown, first_unknown=first_unknown, tick_hz=tick_hz, file_offset=raw.src_offset)
    kinds: Counter = Counter()
    for i, c in ids.items():
        kinds[int(event_kind(i))] += c
    origin = raw.first_ts if raw.direction == "up" else mask - raw.first_ts
    meta = TraceMeta(
        source_format="tracex", source_version=f"TraceX buffer ({raw.layout['endianness']}-endian)",
        source_path=str(path), source_sha256=hashlib.sha256(data).hexdigest(),
        tick_hz=int(tick_hz) if tick_hz else None, clock_domain="target_timer", rtos="ThreadX",
        cores=max_core + 1, origin_raw=origin, source_kind="trace",
        extra={"tracex": {"header": raw.header, "layout": raw.layout, "objects": raw.objects}})
    duration = int_ticks_to_ns(raw.last_tick, tick_hz) if tick_hz else raw.last_tick
    return TraceSummary(meta=meta, events=len(raw.events), duration=duration,
                        kind_counts={EventKind(k).name: kinds[k] for k in sorted(kinds)}, tasks=tasks,
                        isrs=[Isr(i, f"isr {i}") for i in sorted(isrs)],
                        markers=[Marker(i, nm) for i, nm in sorted(fmt.CT_SITES.items())],
                        diagnostics=diags)
