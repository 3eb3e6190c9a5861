"""CTF stream files -> packets -> :class:`RawEvent` records, with damage reported by byte offset.

A stream file is a sequence of packets. A packet has an optional header (``magic``
``0xC1FC1FC1``, ``uuid``, ``stream_id``), an optional context (``content_size`` and
``packet_size`` in bits, ``timestamp_begin``/``timestamp_end``, ``events_discarded``,
``packet_seq_num``, ``cpu_id``) and events. Without ``packet_size`` the packet runs to the end of
the file (Zephyr's headerless streams). Damage handling:

- the file ends inside an event or inside a declared packet -> ``TRUNCATED``, through the
  ``on_corrupt`` policy as in every reader (raises under ``raise``; else DATA_LOSS, every complete
  event before it kept);
- only zero bytes left where an event should start -> ``TRAILING_PADDING`` (INFO; RAM dumps);
- an impossible event (unknown id, bad variant tag, absurd sequence length) -> the ``on_corrupt``
  policy (``CORRUPT_REGION``); under ``warn``/``skip`` decoding resumes at the first later
  position from which events decode cleanly again (``CTF_RESYNC`` with the skipped byte count);
  with packet headers, at the next packet;
- ``events_discarded`` growing between packets -> ``CTF_DISCARDED`` (DATA_LOSS).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._meta import Diagnostic
from ..errors import TraceCorruptError, TraceFormatError, diagnostic, handle_corrupt
from .decode import Bad, Compiled, Ctx, Short, header_event_id

CTF_MAGIC = 0xC1FC1FC1
RESYNC_EVENTS = 16  #: a resync candidate must decode this many events (or reach the end) cleanly
RESYNC_WINDOW = 1 << 16  #: bytes searched for a resync point after damage
RESYNC_SPAN = 256  #: bytes of further candidates compared after the first clean one
RESYNC_MIN = 4  #: clean events needed before a position is a resync candidate
RESYNC_CHECKED = 3  #: events after which candidates' clock values are compared


class RawEvent:
    """One decoded event record."""

    __slots__ = ("stream", "offset", "ts", "sid", "eid", "name", "header", "stream_context",
                 "context", "fields", "cpu", "packet")

    def __init__(self, stream: int, offset: int, ts: int | None, sid: int, eid: int, name: str,
                 header: Any, stream_context: Any, context: Any, fields: Any, cpu: int,
                 packet: int) -> None:
        self.stream, self.offset, self.ts, self.sid, self.eid = stream, offset, ts, sid, eid
        self.name, self.header, self.stream_context = name, header, stream_context
        self.context, self.fields, self.cpu, self.packet = context, fields, cpu, packet

    def __repr__(self) -> str:
        return f"<RawEvent {self.name} ts={self.ts} @{self.offset:#x} {self.fields}>"


@dataclass
class StreamInfo:
    """Per stream file facts (``meta.extra["streams"]``)."""

    path: str
    size: int
    packets: int = 0
    events: int = 0
    discarded: int = 0
    clock_wraps: int = 0
    cpus: set[int] = field(default_factory=set)


class _Drop(Exception):
    """Internal: stop decoding the current packet (already reported)."""


def _all_zero(buf: Any, start: int, end: int) -> bool:
    return not any(bytes(buf[start:end]))


class StreamDecoder:
    """Decodes one stream file into ``out``; diagnostics go to ``diags``."""

    def __init__(self, comp: Compiled, data: bytes, index: int, path: str, on_corrupt: str,
                 diags: list[Diagnostic], out: list[RawEvent]) -> None:
        self.c, self.data, self.index, self.path = comp, data, index, path
        self.on_corrupt, self.diags, self.out = on_corrupt, diags, out
        self.ctx = Ctx()
        self.info = StreamInfo(path, len(data))
        self.prev_discarded: int | None = None
        self.prev_seq: int | None = None

    # -- packets --------------------------------------------------------------------------------
    def run(self) -> StreamInfo:
        pos, n = 0, len(self.data)
        while pos < n:
            nxt = self._packet(pos)
            if nxt is None:
                break
            pos = nxt
        self.info.clock_wraps = sum(self.ctx.wraps.values())
        return self.info

    def _truncated(self, off: int, what: str) -> None:
        handle_corrupt(TraceCorruptError(what, code="TRUNCATED", path=self.path, offset=off),
                       self.on_corrupt, self.diags)  # type: ignore[arg-type]

    def _corrupt(self, off: int, what: str) -> None:
        handle_corrupt(TraceCorruptError(what, code="CORRUPT_REGION", path=self.path, offset=off),
                       self.on_corrupt, self.diags)  # type: ignore[arg-type]

    def _packet(self, pos: int) -> int | None:
        data, c, ctx = self.data, self.c, self.ctx
        buf = memoryview(data)[pos:]
        ctx.end = len(buf) * 8
        ctx.scopes = {}
        bit, sid, hdr = 0, next(iter(c.meta.streams)), None
        try:
            if c.packet_header is not None:
                ctx.stack = []
                hdr, bit = c.packet_header(buf, 0, ctx)
                ctx.scopes["trace.packet.header"] = hdr
                magic = hdr.get("magic")
                if isinstance(magic, int) and magic != CTF_MAGIC:
                    if pos == 0:
                        raise TraceFormatError(
                            f"expected the CTF packet magic 0xC1FC1FC1, found 0x{magic:08X}",
                            code="CTF_BAD_MAGIC", path=self.path, offset=0)
                    self._corrupt(pos, f"packet magic 0x{magic:08X} (expected 0xC1FC1FC1)")
                    return self._next_magic(pos)
                if "stream_id" in hdr:
                    sid = int(hdr["stream_id"])
                elif len(c.meta.streams) > 1:
                    raise Bad(bit, "packet header has no stream_id but the trace has several streams")
                if sid not in c.meta.streams:
                    raise Bad(bit, f"packet names stream id {sid}, which the metadata does not declare")
            pctx_dec = c.packet_context[sid]
            pctx: dict[str, Any] = {}
            if pctx_dec is not None:
                ctx.stack = []
                pctx, bit = pctx_dec(buf, bit, ctx)
                ctx.scopes["stream.packet.context"] = pctx
        except Short as e:
            self._truncated(pos + e.bit // 8, f"the file ends inside a packet header/context ({e.what})")
            return None
        except Bad as e:
            self._corrupt(pos + e.bit // 8, e.what)
            return self._next_magic(pos) if c.packet_header is not None else None
        packet_bits = pctx.get("packet_size")
        content_bits = pctx.get("content_size", packet_bits)
        if packet_bits is None:
            packet_bits = content_bits if content_bits is not None else len(buf) * 8
        if content_bits is None:
            content_bits = packet_bits
        if content_bits > packet_bits or packet_bits < bit or packet_bits % 8 or content_bits < bit:
            self._corrupt(pos, f"packet sizes content={content_bits} packet={packet_bits} bits are "
                          "inconsistent")
            return self._next_magic(pos) if c.packet_header is not None else None
        if packet_bits > len(buf) * 8:
            self._truncated(pos, f"packet of {packet_bits // 8} bytes at 0x{pos:x} is cut at "
                            f"{len(buf)} bytes by the end of the file")
            content_bits = min(content_bits, len(buf) * 8)
        self._packet_facts(pos, pctx, sid)
        ctx.end = content_bits
        self._events(buf, pos, bit, sid, int(pctx.get("cpu_id", -1)), hdr, pctx)
        self.info.packets += 1
        return pos + packet_bits // 8

    def _lost(self, offset: int, sid: int, cpu: int, lost: int | None) -> None:
        """An OVERFLOW record (``eid`` -1) at the current clock value: events were lost here."""
        clock = self.c.default_clock[sid]
        ts = self.ctx.clocks.get(clock) if clock else None
        self.out.append(RawEvent(self.index, offset, ts, sid, -1, "", None, None, None,
                                 {"lost": lost}, cpu, self.info.packets))

    def _packet_facts(self, pos: int, pctx: dict[str, Any], sid: int) -> None:
        cpu = int(pctx.get("cpu_id", -1))
        if "cpu_id" in pctx:
            self.info.cpus.add(int(pctx["cpu_id"]))
        disc = pctx.get("events_discarded")
        if isinstance(disc, int):
            if self.prev_discarded is not None and disc > self.prev_discarded:
                lost = disc - self.prev_discarded
                self.info.discarded += lost
                self.diags.append(diagnostic("CTF_DISCARDED", pos, f"the tracer discarded {lost} "
                                             f"events before the packet at 0x{pos:x}", count=lost))
                self._lost(pos, sid, cpu, disc)
            self.prev_discarded = disc
        seq = pctx.get("packet_seq_num")
        if isinstance(seq, int):
            if self.prev_seq is not None and seq > self.prev_seq + 1:
                self.diags.append(diagnostic("CTF_DISCARDED", pos, f"{seq - self.prev_seq - 1} packets "
                                             f"lost before 0x{pos:x} (packet_seq_num {self.prev_seq} "
                                             f"-> {seq})", count=seq - self.prev_seq - 1))
                self._lost(pos, sid, cpu, None)
            self.prev_seq = seq

    def _next_magic(self, pos: int) -> int | None:
        """Resync on packets: the next offset after ``pos`` starting with the packet magic."""
        bo = "little" if self.c.meta.byte_order == "le" else "big"
        needle = CTF_MAGIC.to_bytes(4, bo)
        nxt = self.data.find(needle, pos + 1)
        if nxt < 0:
            return None
        self.diags.append(diagnostic("CTF_RESYNC", pos, f"skipped {nxt - pos} bytes to the next "
                                     f"packet magic at 0x{nxt:x}", count=nxt - pos))
        return nxt

    # -- events ---------------------------------------------------------------------------------
    def _event(self, buf: Any, bit: int, sid: int, cpu: int, base: int) -> tuple[RawEvent, int]:
        c, ctx = self.c, self.ctx
        start = bit
        ctx.stack = []
        hdr, hdec = None, c.event_header[sid]
        if hdec is not None:
            hdr, bit = hdec(buf, bit, ctx)
            ctx.scopes["stream.event.header"] = hdr
        eid = header_event_id(hdr)
        if eid is None:
            eid = c.single_event[sid]
            if eid is None:
                raise Bad(start, "the event header has no id and the stream has several event classes")
        key = (sid, eid)
        ev = c.meta.events.get(key)
        if ev is None:
            raise Bad(start, f"event id {eid} is not declared for stream {sid}")
        sctx = ectx = fields = None
        d = c.stream_event_context[sid]
        if d is not None:
            sctx, bit = d(buf, bit, ctx)
            ctx.scopes["stream.event.context"] = sctx
        d = c.event_context[key]
        if d is not None:
            ectx, bit = d(buf, bit, ctx)
            ctx.scopes["event.context"] = ectx
        d = c.fields[key]
        if d is not None:
            fields, bit = d(buf, bit, ctx)
        if bit == start:
            raise Bad(start, f"event {ev.name!r} has no content: it would repeat forever")
        clock = c.default_clock[sid]
        ts = ctx.clocks.get(clock) if clock else None
        rec = RawEvent(self.index, base + start // 8, ts, sid, eid, ev.name, hdr, sctx, ectx, fields,
                       cpu, self.info.packets)
        return rec, bit

    def _events(self, buf: Any, pos: int, bit: int, sid: int, cpu: int, hdr: Any, pctx: Any) -> None:
        ctx = self.ctx
        amask = self.c.header_align[sid] - 1
        end = ctx.end
        while True:
            bit = (bit + amask) & ~amask
            if bit >= end:
                return
            try:
                rec, bit = self._event(buf, bit, sid, cpu, pos)
            except Short as e:
                if _all_zero(buf, bit >> 3, end >> 3):  # RAM dumps: the unused buffer tail
                    self._padding(pos, bit, end)
                    return
                self._truncated(pos + bit // 8, f"the stream ends inside an event at "
                                f"0x{pos + bit // 8:x} ({e.what})")
                return
            except Bad as e:
                if _all_zero(buf, bit >> 3, end >> 3):
                    self._padding(pos, bit, end)
                    return
                self._corrupt(pos + bit // 8, f"{e.what} at 0x{pos + bit // 8:x}")
                self._lost(pos + bit // 8, sid, cpu, None)
                nxt = self._resync(buf, bit, sid, cpu, pos, hdr, pctx)
                if nxt is None:
                    return
                bit = nxt
                continue
            self.out.append(rec)
            self.info.events += 1

    def _padding(self, pos: int, bit: int, end: int) -> None:
        self.diags.append(diagnostic("TRAILING_PADDING", pos + bit // 8,
                                     f"{(end - bit) // 8} zero bytes after the last event"))

    def _resync(self, buf: Any, bad_bit: int, sid: int, cpu: int, pos: int, hdr: Any,
                pctx: Any) -> int | None:
        """Where decoding resumes after damage at ``bad_bit``. From the first position where at
        least ``RESYNC_MIN`` events decode cleanly, ``RESYNC_SPAN`` more bytes of positions are
        compared by :meth:`_probe`'s score (most clean events, fewest implausible ones, smallest
        clock), then the earliest position wins."""
        ctx = self.ctx
        step = max(self.c.header_align[sid], 8)
        end = ctx.end
        saved = dict(ctx.clocks), dict(ctx.wraps)
        limit = min(end, bad_bit + 8 * RESYNC_WINDOW)
        cand = ((bad_bit + step) // step) * step
        best: tuple[int, int, int, int] | None = None
        stop = limit
        while cand < stop:
            n_ok, odd, at = self._probe(buf, cand, sid, cpu, pos, end)
            if n_ok >= RESYNC_MIN:
                score = (-n_ok, odd, at, cand)
                if best is None:
                    stop = min(limit, cand + 8 * RESYNC_SPAN)
                if best is None or score < best:
                    best = score
            ctx.clocks, ctx.wraps = dict(saved[0]), dict(saved[1])
            cand += step
        ctx.clocks, ctx.wraps = saved
        ctx.scopes = {"trace.packet.header": hdr, "stream.packet.context": pctx}
        if best is None:
            self.diags.append(diagnostic("CTF_RESYNC", pos + bad_bit // 8, "no decodable event "
                                         f"after the damage at 0x{pos + bad_bit // 8:x}: the rest of "
                                         "the packet is lost", count=(end - bad_bit) // 8))
            return None
        found = best[3]
        skipped = (found - bad_bit) // 8
        self.diags.append(diagnostic("CTF_RESYNC", pos + bad_bit // 8, f"skipped {skipped} damaged "
                                     f"bytes at 0x{pos + bad_bit // 8:x}; decoding resumed at "
                                     f"0x{pos + found // 8:x}", count=skipped))
        return found

    def _probe(self, buf: Any, bit: int, sid: int, cpu: int, pos: int, end: int) -> tuple[int, int, int]:
        """Score of ``bit`` as a resync point: (events decoded cleanly, capped at
        ``RESYNC_EVENTS``, reaching the end of the content or only zero bytes counting as all;
        implausible events among the first ``RESYNC_CHECKED``: a clock step beyond half the
        timestamp range or a minute, text that is not printable UTF-8; the clock value after
        them: the true start follows the damage closest in time, false starts decode random
        timestamps, which push the unrolled clock ahead)."""
        amask = self.c.header_align[sid] - 1
        clock, limit = self.c.default_clock[sid], self.c.max_step[sid]
        ctx = self.ctx
        n = at = odd = 0
        while n < RESYNC_EVENTS:
            if n == RESYNC_CHECKED:
                at = ctx.clocks.get(clock, 0) if clock else 0
            bit = (bit + amask) & ~amask
            if bit >= end:
                n = RESYNC_EVENTS
                break
            before = ctx.clocks.get(clock) if clock else None
            try:
                rec, bit = self._event(buf, bit, sid, cpu, pos)
            except (Short, Bad):
                n = RESYNC_EVENTS if _all_zero(buf, bit >> 3, end >> 3) else n
                break
            if n < RESYNC_CHECKED:
                odd += _odd_text(rec.fields) + _odd_text(rec.context) + _odd_text(rec.stream_context)
                step = rec.ts - before if before is not None and rec.ts is not None else 0
                if limit is not None and step >= limit:
                    odd += 1
            n += 1
        if n <= RESYNC_CHECKED or not at:
            at = ctx.clocks.get(clock, 0) if clock else 0
        return n, odd, at


def _odd_text(v: Any) -> int:
    """1 if a decoded value holds text that is not printable UTF-8 (a false resync start)."""
    if isinstance(v, str):
        return int("\ufffd" in v or any(c < " " for c in v))
    if isinstance(v, dict):
        return max((_odd_text(x) for x in v.values()), default=0)
    if isinstance(v, list) and v and isinstance(v[0], (str, dict, list)):
        return max(_odd_text(x) for x in v)
    return 0
