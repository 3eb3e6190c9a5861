"""CTF 1.8 binary streams -> raw event records, driven by the parsed TSDL declarations.

Each TSDL type is compiled once into a decoder closure ``dec(buf, bit, ctx) -> (value, bit)`` that
works on bit positions relative to the packet start (CTF alignment is relative to the packet).
Byte-aligned integers of 8/16/32/64 bits take a ``struct`` fast path; anything else (bit fields,
big-endian bit order) goes through a generic bit reader. Values: integers as ``int`` (enumerations
as :class:`EnumValue`, an ``int`` with its ``label``), floats, strings (text arrays and sequences of
8-bit encoded integers are strings cut at the first NUL, as babeltrace2 shows them), structures as
``dict``, arrays/sequences as ``list``, a variant as its selected option's value.

Clock semantics (CTF 1.8 §8): every integer mapped to a clock (``map = clock.X.value``) updates
that clock's 64-bit value when it is decoded: an N-bit field replaces the low N bits, adding
``2**N`` when the new low bits are smaller than the old ones (one wrap). ``timestamp_end`` of the
packet context is a packet property, not an update.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from .tsdl import (
    ArrayT,
    EnumT,
    FloatT,
    IntT,
    Metadata,
    SeqT,
    StringT,
    StructT,
    VariantT,
    alignment,
)

Decoder = Callable[[Any, int, "Ctx"], tuple[Any, int]]

MAX_SEQUENCE = 1 << 24  #: longest sequence accepted (elements); longer is treated as damage


class Short(Exception):
    """The packet content ends inside a field (bit position relative to the packet)."""

    def __init__(self, bit: int, what: str) -> None:
        super().__init__(what)
        self.bit = bit
        self.what = what


class Bad(Exception):
    """A structurally impossible value (unknown event id, bad variant tag, absurd length)."""

    def __init__(self, bit: int, what: str) -> None:
        super().__init__(what)
        self.bit = bit
        self.what = what


class EnumValue(int):
    """An enumeration value: an ``int`` that also knows its mapping label (``None`` if unmapped)."""

    label: str | None

    def __new__(cls, v: int, label: str | None) -> EnumValue:
        obj = int.__new__(cls, v)
        obj.label = label
        return obj


class Ctx:
    """Decoding state for one stream file: end of content, open structures, scopes, clocks."""

    __slots__ = ("end", "stack", "scopes", "clocks", "wraps")

    def __init__(self) -> None:
        self.end = 0
        self.stack: list[dict[str, Any]] = []
        self.scopes: dict[str, dict[str, Any]] = {}
        self.clocks: dict[str, int] = {}
        self.wraps: dict[str, int] = {}

    def update_clock(self, name: str, v: int, size: int) -> None:
        cur = self.clocks.get(name)
        if cur is None or size >= 64:
            self.clocks[name] = v
            return
        mask = (1 << size) - 1
        new = (cur & ~mask) | v
        if v < (cur & mask):
            new += 1 << size
            self.wraps[name] = self.wraps.get(name, 0) + 1
        self.clocks[name] = new

    def lookup(self, path: str, bit: int) -> Any:
        parts = path.split(".")
        for prefix in ("trace.packet.header", "stream.packet.context", "stream.event.header",
                       "stream.event.context", "event.context", "event.fields"):
            if path.startswith(prefix + "."):
                cur: Any = self.scopes.get(prefix)
                rest = path[len(prefix) + 1:].split(".")
                break
        else:
            cur = next((d for d in reversed(self.stack) if parts[0] in d), None)
            rest = parts
        for p in rest:
            if not isinstance(cur, dict) or p not in cur:
                raise Bad(bit, f"field path {path!r} names no decoded field")
            cur = cur[p]
        return cur


_INT_FMT = {8: "b", 16: "h", 32: "i", 64: "q"}


def _bits(buf: Any, bit: int, size: int, be: bool) -> int:
    b0, b1 = bit >> 3, (bit + size + 7) >> 3
    if be:
        return (int.from_bytes(buf[b0:b1], "big") >> (b1 * 8 - bit - size)) & ((1 << size) - 1)
    return (int.from_bytes(buf[b0:b1], "little") >> (bit & 7)) & ((1 << size) - 1)


def _int_dec(t: IntT, bo: str, clock_ok: bool = True) -> Decoder:
    size, amask, signed, be = t.size, t.align - 1, t.signed, bo == "be"
    clock = t.clock if clock_ok else None
    fast = struct.Struct((">" if be else "<") + (_INT_FMT[size] if signed else _INT_FMT[size].upper())) \
        if size in _INT_FMT else None
    sign_bit = 1 << (size - 1)

    def dec(buf: Any, bit: int, ctx: Ctx) -> tuple[int, int]:
        bit = (bit + amask) & ~amask
        end = bit + size
        if end > ctx.end:
            raise Short(bit, f"{size}-bit integer")
        if fast is not None and not bit & 7:
            v = fast.unpack_from(buf, bit >> 3)[0]
        else:
            v = _bits(buf, bit, size, be)
            if signed and v & sign_bit:
                v -= 1 << size
        if clock is not None:
            ctx.update_clock(clock, v if v >= 0 else v + (1 << size), size)
        return v, end

    return dec


def _float_dec(t: FloatT, bo: str) -> Decoder:
    size = t.exp_dig + t.mant_dig
    fmt = struct.Struct((">" if bo == "be" else "<") + ("f" if size == 32 else "d"))
    amask = t.align - 1

    def dec(buf: Any, bit: int, ctx: Ctx) -> tuple[float, int]:
        bit = (bit + amask) & ~amask
        if bit + size > ctx.end:
            raise Short(bit, f"{size}-bit float")
        if bit & 7:
            raw = _bits(buf, bit, size, bo == "be").to_bytes(size // 8, "big" if bo == "be" else "little")
            return fmt.unpack(raw)[0], bit + size
        return fmt.unpack_from(buf, bit >> 3)[0], bit + size

    return dec


def _string_dec(buf: Any, bit: int, ctx: Ctx) -> tuple[str, int]:
    bit = (bit + 7) & ~7
    b0, lim = bit >> 3, ctx.end >> 3
    data = bytes(buf[b0:lim]) if not isinstance(buf, bytes) else buf[b0:lim]
    n = data.find(b"\0")
    if n < 0:
        raise Short(bit, "NUL-terminated string")
    return data[:n].decode("utf-8", "replace"), bit + (n + 1) * 8


def _is_text(elem: Any) -> bool:
    return isinstance(elem, IntT) and elem.size == 8 and elem.encoding != "none" and not elem.align % 8


def _text(buf: Any, bit: int, n: int, ctx: Ctx) -> tuple[str, int]:
    bit = (bit + 7) & ~7
    end = bit + 8 * n
    if end > ctx.end:
        raise Short(bit, f"text of {n} bytes")
    raw = bytes(buf[bit >> 3:end >> 3])
    cut = raw.find(b"\0")
    return (raw if cut < 0 else raw[:cut]).decode("utf-8", "replace"), end


def _min_bits(t: Any) -> int:
    if isinstance(t, (IntT, FloatT)):
        return t.size if isinstance(t, IntT) else t.exp_dig + t.mant_dig
    if isinstance(t, EnumT):
        return t.base.size
    if isinstance(t, StringT):
        return 8
    if isinstance(t, StructT):
        return sum(_min_bits(f) for _, f in t.fields)
    if isinstance(t, ArrayT):
        return t.length * _min_bits(t.elem)
    return 0


def compile_type(t: Any, bo: str, *, no_clock: frozenset[str] = frozenset()) -> Decoder:
    """Decoder closure for a TSDL type; ``bo`` is the trace's byte order for ``native`` types."""
    if isinstance(t, IntT):
        return _int_dec(t, t.byte_order or bo)
    if isinstance(t, FloatT):
        return _float_dec(t, t.byte_order or bo)
    if isinstance(t, StringT):
        return _string_dec
    if isinstance(t, EnumT):
        base = _int_dec(t.base, t.base.byte_order or bo)
        enum = t

        def dec_enum(buf: Any, bit: int, ctx: Ctx) -> tuple[EnumValue, int]:
            v, bit = base(buf, bit, ctx)
            return EnumValue(v, enum.label(v)), bit

        return dec_enum
    if isinstance(t, StructT):
        return _struct_dec(t, bo, no_clock)
    if isinstance(t, (ArrayT, SeqT)):
        return _array_dec(t, bo)
    if isinstance(t, VariantT):
        return _variant_dec(t, bo)
    raise TypeError(f"cannot decode {t!r}")  # pragma: no cover - the parser only builds the above


def _flat_struct(t: StructT, bo: str, no_clock: frozenset[str]) -> Decoder | None:
    """One ``struct.Struct`` for a structure of byte-aligned 8/16/32/64-bit integers and text
    arrays in one byte order (Zephyr's headers and payloads): a single unpack per structure."""
    if alignment(t) > 8 or not t.fields:
        return None
    codes, texts, clocks = [], [], []
    orders = set()
    for i, (n, f) in enumerate(t.fields):
        if isinstance(f, IntT) and f.size in _INT_FMT and f.align <= 8:
            orders.add(f.byte_order or bo)
            codes.append(_INT_FMT[f.size] if f.signed else _INT_FMT[f.size].upper())
            if f.clock and n not in no_clock:
                clocks.append((i, f.clock, f.size))
        elif isinstance(f, ArrayT) and _is_text(f.elem) and f.elem.align <= 8:
            codes.append(f"{f.length}s")
            texts.append(i)
        else:
            return None
    if len(orders) > 1:
        return None
    fmt = struct.Struct((">" if orders == {"be"} else "<") + "".join(codes))
    names, size = tuple(n for n, _ in t.fields), fmt.size * 8

    def dec(buf: Any, bit: int, ctx: Ctx) -> tuple[dict[str, Any], int]:
        bit = (bit + 7) & ~7
        if bit + size > ctx.end:
            raise Short(bit, f"structure of {size // 8} bytes")
        vals = list(fmt.unpack_from(buf, bit >> 3))
        for i in texts:
            raw = vals[i]
            cut = raw.find(b"\0")
            vals[i] = (raw if cut < 0 else raw[:cut]).decode("utf-8", "replace")
        for i, clock, w in clocks:
            v = vals[i]
            ctx.update_clock(clock, v if v >= 0 else v + (1 << w), w)
        return dict(zip(names, vals)), bit + size

    return dec


def _struct_dec(t: StructT, bo: str, no_clock: frozenset[str]) -> Decoder:
    flat = _flat_struct(t, bo, no_clock)
    if flat is not None:
        return flat
    amask = alignment(t) - 1
    pairs = tuple((n, _int_dec(f, f.byte_order or bo, clock_ok=False)
                   if n in no_clock and isinstance(f, IntT) else compile_type(f, bo))
                  for n, f in t.fields)

    def dec(buf: Any, bit: int, ctx: Ctx) -> tuple[dict[str, Any], int]:
        bit = (bit + amask) & ~amask
        d: dict[str, Any] = {}
        ctx.stack.append(d)
        for n, f in pairs:
            d[n], bit = f(buf, bit, ctx)
        ctx.stack.pop()
        return d, bit

    return dec


def _array_dec(t: ArrayT | SeqT, bo: str) -> Decoder:
    elem = compile_type(t.elem, bo)
    text = _is_text(t.elem)
    amask = alignment(t.elem) - 1
    per = max(_min_bits(t.elem), 0)
    fixed = t.length if isinstance(t, ArrayT) else None
    path = t.length_path if isinstance(t, SeqT) else ""

    def dec(buf: Any, bit: int, ctx: Ctx) -> tuple[Any, int]:
        n = fixed if fixed is not None else ctx.lookup(path, bit)
        if not isinstance(n, int) or n < 0 or n > (MAX_SEQUENCE if per else 1 << 12):
            raise Bad(bit, f"sequence length {n!r} (from {path!r}) is not a valid length")
        if per and bit + n * per > ctx.end:
            raise Short(bit, f"{n} array elements")
        if text:
            return _text(buf, bit, n, ctx)
        bit = (bit + amask) & ~amask
        out = []
        for _ in range(n):
            v, bit = elem(buf, bit, ctx)
            out.append(v)
        return out, bit

    return dec


def _variant_dec(t: VariantT, bo: str) -> Decoder:
    opts = {n: compile_type(f, bo) for n, f in t.options}
    path = t.tag_path

    def dec(buf: Any, bit: int, ctx: Ctx) -> tuple[Any, int]:
        if path is None:
            raise Bad(bit, "variant without a tag")
        tag = ctx.lookup(path, bit)
        label = getattr(tag, "label", None)
        if label not in opts:
            raise Bad(bit, f"variant tag {path}={int(tag) if isinstance(tag, int) else tag!r} "
                      "selects no option")
        return opts[label](buf, bit, ctx)

    return dec


def clocks_in(t: Any) -> list[str]:
    """Names of the clocks that integers inside ``t`` map to (depth first)."""
    if isinstance(t, IntT):
        return [t.clock] if t.clock else []
    if isinstance(t, EnumT):
        return clocks_in(t.base)
    if isinstance(t, StructT):
        return [c for _, f in t.fields for c in clocks_in(f)]
    if isinstance(t, VariantT):
        return [c for _, f in t.options for c in clocks_in(f)]
    if isinstance(t, (ArrayT, SeqT)):
        return clocks_in(t.elem)
    return []


def clock_widths(t: Any) -> list[int]:
    """Bit widths of the clock-mapped integers inside ``t``."""
    if isinstance(t, IntT):
        return [t.size] if t.clock else []
    if isinstance(t, EnumT):
        return clock_widths(t.base)
    if isinstance(t, StructT):
        return [w for _, f in t.fields for w in clock_widths(f)]
    if isinstance(t, VariantT):
        return [w for _, f in t.options for w in clock_widths(f)]
    return []


class Compiled:
    """Every scope of a trace's metadata compiled once into decoders."""

    def __init__(self, meta: Metadata) -> None:
        bo = meta.byte_order
        self.meta = meta

        def comp(st: StructT | None, no_clock: frozenset[str] = frozenset()) -> Decoder | None:
            return None if st is None else _struct_dec(st, bo, no_clock)

        self.packet_header = comp(meta.packet_header)
        self.packet_context = {sid: comp(s.packet_context, frozenset({"timestamp_end"}))
                               for sid, s in meta.streams.items()}
        self.event_header = {sid: comp(s.event_header) for sid, s in meta.streams.items()}
        self.stream_event_context = {sid: comp(s.event_context) for sid, s in meta.streams.items()}
        self.event_context = {k: comp(e.context) for k, e in meta.events.items()}
        self.fields = {k: comp(e.fields) for k, e in meta.events.items()}
        self.header_align = {sid: (alignment(s.event_header) if s.event_header else 8)
                             for sid, s in meta.streams.items()}
        self.single_event = {}
        for sid in meta.streams:
            ids = [eid for (s, eid) in meta.events if s == sid]
            self.single_event[sid] = ids[0] if len(ids) == 1 else None
        self.default_clock: dict[int, str | None] = {}
        self.max_step: dict[int, int | None] = {}
        for sid, s in meta.streams.items():
            names = clocks_in(s.event_header) + clocks_in(s.packet_context)
            self.default_clock[sid] = names[0] if names else None
            widths = clock_widths(s.event_header)
            clk = meta.clocks.get(names[0]) if names else None
            # largest plausible clock step between two events while resynchronising: half the
            # narrowest timestamp's range, at most a minute of clock time
            self.max_step[sid] = min(1 << (min(widths) - 1), 60 * clk.freq) if widths and clk else None


def header_event_id(h: dict[str, Any] | None) -> int | None:
    """Event class id from a decoded event header: the last ``id`` decoded (``v.id`` in LTTng's
    compact/extended variant overrides the 5-bit ``id``), or None when the header has none."""
    if not h:
        return None
    eid = h.get("id")
    v = h.get("v")
    if isinstance(v, dict) and isinstance(v.get("id"), int):
        eid = v["id"]
    return int(eid) if isinstance(eid, int) else None
