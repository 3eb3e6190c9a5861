"""TSDL (CTF 1.8 metadata) -> declarations: types, trace, streams, events, clocks, env.

A small recursive-descent parser for the Trace Stream Description Language of the Common Trace
Format 1.8: ``typealias``/``typedef``, ``integer``/``floating_point``/``string``/``struct``/
``enum``/``variant`` type specifiers, fixed arrays and sequences, and the ``trace``, ``stream``,
``event``, ``clock``, ``env`` (and ignored ``callsite``) blocks. Text metadata and packetized
metadata (``0x75D11D57`` packets) are both accepted. Every parse error raises
:class:`~trace_parsers.errors.TraceFormatError` ``CTF_BAD_METADATA`` with the byte offset in the
metadata file.

    >>> m = parse_metadata(b'/* CTF 1.8 */ typealias integer { size = 8; } := u8; '
    ...                    b'trace { major = 1; minor = 8; byte_order = le; }; '
    ...                    b'event { name = tick; id = 1; fields := struct { u8 n; }; };')
    >>> m.events[(0, 1)].name, m.events[(0, 1)].fields.fields[0][0]
    ('tick', 'n')
"""

from __future__ import annotations

import re
import struct
from dataclasses import replace
from typing import Any

from ..errors import TraceFormatError
from .types import (
    ArrayT,
    ClockDecl,
    EnumT,
    EventDecl,
    FloatT,
    IntT,
    Metadata,
    SeqT,
    StreamDecl,
    StringT,
    StructT,
    Type,
    VariantT,
    alignment,
)

__all__ = ["ArrayT", "ClockDecl", "EnumT", "EventDecl", "FloatT", "IntT", "Metadata", "SeqT",
           "StreamDecl", "StringT", "StructT", "Type", "VariantT", "alignment", "parse_metadata",
           "looks_like_metadata", "depacketize", "PACKET_META_MAGIC"]

# ----------------------------------------------------------------------------------------------
# Lexer
# ----------------------------------------------------------------------------------------------

#: Whitespace and comments, each matching one way only (a block comment ends at its first ``*/``, a
#: line comment at the line end, a run of spaces is taken whole), so backtracking can neither stretch
#: a comment over an error nor start a token inside a comment, and stays linear.
_SKIP = r"\s*(?:(?:/\*[^*]*\*+(?:[^/*][^*]*\*+)*/|//[^\n]*(?![^\n]))\s*)*"
#: One token with what precedes it; ``end`` matches after the last token.
_TOKEN = re.compile(_SKIP + r"""
    (?:(?P<str>"(?:[^"\\]|\\.)*")
     | (?P<num>0[xX][0-9a-fA-F]+[uUlL]*|[0-9]+[uUlL]*)
     | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
     | (?P<op>:=|\.\.\.|->|[{}()\[\];:=,<>.+\-*])
     | (?P<end>\Z))
""", re.S | re.X)
_SPACE = re.compile(_SKIP, re.S)

PACKET_META_MAGIC = 0x75D11D57
PACKET_META_HEADER = 37  # bytes: magic, uuid[16], checksum, content_size, packet_size, 5 u8


def _error(msg: str, offset: int) -> TraceFormatError:
    return TraceFormatError(msg, code="CTF_BAD_METADATA", offset=offset)


def tokenize(text: str) -> list[tuple[str, str, int]]:
    """(kind, text, offset) tokens; comments and whitespace dropped. An error names the first
    character no token starts with, never one inside a comment stretched over it:

    >>> tokenize("id = 0x1F; // done")
    [('id', 'id', 0), ('op', '=', 3), ('num', '0x1F', 5), ('op', ';', 9)]
    >>> tokenize("a /* b */ @ /* c */ d")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    trace_parsers.errors.TraceFormatError: <input>:0xa: unexpected character '@' ...
    """
    out: list[tuple[str, str, int]] = []
    match, pos = _TOKEN.match, 0
    while (m := match(text, pos)) is not None:  # anchored: a failure costs one scan, not one per start
        kind = m.lastgroup or ""
        if kind == "end":
            return out
        start, pos = m.start(kind), m.end()
        out.append((kind, text[start:pos], start))
    bad = _SPACE.match(text, pos).end()  # type: ignore[union-attr]  # matches the empty string
    raise _error(f"unexpected character {text[bad]!r} in the TSDL metadata", bad)


def depacketize(data: bytes) -> str:
    """Text of packetized metadata (``0x75D11D57`` packets, either byte order), or the text itself."""
    if len(data) >= 4 and PACKET_META_MAGIC in (struct.unpack_from("<I", data)[0],
                                                 struct.unpack_from(">I", data)[0]):
        bo = "<" if struct.unpack_from("<I", data)[0] == PACKET_META_MAGIC else ">"
        parts, pos = [], 0
        while pos + PACKET_META_HEADER <= len(data):
            magic, = struct.unpack_from(bo + "I", data, pos)
            if magic != PACKET_META_MAGIC:
                raise _error(f"metadata packet magic 0x{magic:08x} (expected 0x{PACKET_META_MAGIC:08X})", pos)
            content, size = struct.unpack_from(bo + "II", data, pos + 24)
            comp, enc = data[pos + 32], data[pos + 33]
            if comp or enc:
                raise _error("compressed or encrypted metadata packets are not supported", pos + 32)
            if size < content or content < PACKET_META_HEADER * 8 or size % 8 or pos + size // 8 > len(data):
                raise _error(f"metadata packet sizes content={content} packet={size} bits are "
                             "inconsistent", pos + 24)
            parts.append(data[pos + PACKET_META_HEADER:pos + content // 8])
            pos += size // 8
        data = b"".join(parts)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _error(f"the TSDL metadata is not UTF-8 text (byte 0x{data[e.start]:02x})", e.start) from None


def looks_like_metadata(head: bytes) -> bool:
    """True for a TSDL text file (``/* CTF 1.8``) or a packetized metadata stream."""
    if len(head) >= 4 and PACKET_META_MAGIC in (struct.unpack_from("<I", head)[0],
                                                 struct.unpack_from(">I", head)[0]):
        return True
    return head.lstrip()[:10] == b"/* CTF 1.8"


# ----------------------------------------------------------------------------------------------
# Parser
# ----------------------------------------------------------------------------------------------

_BASES = {"decimal": 10, "dec": 10, "d": 10, "i": 10, "u": 10, "hexadecimal": 16, "hex": 16,
          "x": 16, "X": 16, "p": 16, "octal": 8, "oct": 8, "o": 8, "binary": 2, "b": 2}


class Parser:
    """Recursive-descent TSDL parser producing a :class:`Metadata`."""

    def __init__(self, text: str) -> None:
        self.toks = tokenize(text)
        self.i = 0
        self.text = text
        self.aliases: dict[str, Type] = {}
        self.structs: dict[str, StructT] = {}
        self.enums: dict[str, EnumT] = {}
        self.variants: dict[str, VariantT] = {}
        self.meta = Metadata(text=text)
        self.trace_bo: str | None = None

    # -- token helpers --------------------------------------------------------------------------
    def peek(self, k: int = 0) -> tuple[str, str, int]:
        try:
            return self.toks[self.i + k]
        except IndexError:
            return ("eof", "", len(self.text))

    def next(self) -> tuple[str, str, int]:
        t = self.peek()
        self.i += 1
        return t

    def accept(self, s: str) -> bool:
        kind, txt, _ = self.peek()
        if txt == s and kind in ("op", "id"):
            self.i += 1
            return True
        return False

    def expect(self, s: str) -> None:
        kind, txt, off = self.next()
        if txt != s or kind == "str":
            raise _error(f"expected {s!r} but found {txt or 'the end of the metadata'!r}", off)

    def ident(self) -> str:
        kind, txt, off = self.next()
        if kind != "id":
            raise _error(f"expected a name but found {txt or 'the end of the metadata'!r}", off)
        return txt

    # -- values ---------------------------------------------------------------------------------
    def value(self) -> Any:
        """A constant: integer (with sign), string, or a dotted identifier path."""
        kind, txt, off = self.next()
        if txt in ("-", "+") and self.peek()[0] == "num":
            v = self._num(self.next())
            return -v if txt == "-" else v
        if kind == "num":
            return self._num((kind, txt, off))
        if kind == "str":
            return re.sub(r"\\(.)", r"\1", txt[1:-1])
        if kind == "id":
            parts = [txt]
            while self.peek()[1] == "." and self.peek(1)[0] == "id":
                self.i += 1
                parts.append(self.next()[1])
            return ".".join(parts)
        raise _error(f"expected a value but found {txt or 'the end of the metadata'!r}", off)

    @staticmethod
    def _num(tok: tuple[str, str, int]) -> int:
        s = tok[1].rstrip("uUlL")
        if s.lower().startswith("0x"):
            return int(s, 16)
        if len(s) > 1 and s.startswith("0"):
            return int(s, 8)
        return int(s)

    def int_value(self, what: str) -> int:
        off = self.peek()[2]
        v = self.value()
        if isinstance(v, str) and v.lower() in ("true", "false"):
            return int(v.lower() == "true")
        if not isinstance(v, int):
            raise _error(f"{what} must be an integer, found {v!r}", off)
        return v

    # -- top level ------------------------------------------------------------------------------
    def parse(self) -> Metadata:
        while self.peek()[0] != "eof":
            kind, txt, off = self.peek()
            if txt in ("trace", "stream", "event", "clock", "env", "callsite") and self.peek(1)[1] == "{":
                self.i += 2
                getattr(self, f"_block_{txt}")(off)
                self.expect("}")
                self.expect(";")
            elif txt in ("typealias", "typedef"):
                self._alias()
            else:
                self.type_spec()
                self.expect(";")
        self._finish()
        return self.meta

    def _alias(self) -> None:
        kw = self.next()[1]
        t = self.type_spec()
        if kw == "typealias":
            self.expect(":=")
            names = []
            while self.peek()[1] not in (";", "[") and self.peek()[0] == "id":
                names.append(self.next()[1])
            if not names:
                raise _error("typealias without a name", self.peek()[2])
            name, t = " ".join(names), self._dims(t)
            self.aliases[name] = t
        else:
            while True:
                name = self.ident()
                self.aliases[name] = self._dims(t)
                if not self.accept(","):
                    break
        self.expect(";")

    def _assignments(self, on_value: Any, on_type: Any) -> None:
        while self.peek()[1] != "}":
            if self.peek()[1] in ("typealias", "typedef"):
                self._alias()
                continue
            kind, txt, off = self.peek()
            key = self.value()
            if not isinstance(key, str):
                raise _error(f"expected an attribute name but found {txt!r}", off)
            if self.accept(":="):
                on_type(key, self.type_spec(), off)
            else:
                self.expect("=")
                voff = self.peek()[2]
                on_value(key, self.value(), voff)
            self.expect(";")

    def _block_trace(self, off: int) -> None:
        m = self.meta

        def val(k: str, v: Any, o: int) -> None:
            if k in ("major", "minor"):
                setattr(m, k, v)
            elif k == "byte_order":
                if v not in ("le", "be", "network"):
                    raise _error(f"trace byte_order must be le or be, found {v!r}", o)
                m.byte_order = "be" if v == "network" else v
                self.trace_bo = m.byte_order
            elif k == "uuid":
                m.uuid = str(v)

        def typ(k: str, t: Type, o: int) -> None:
            if k == "packet.header":
                m.packet_header = self._struct(t, k, o)

        self._assignments(val, typ)

    def _block_stream(self, off: int) -> None:
        s = StreamDecl()

        def val(k: str, v: Any, o: int) -> None:
            if k == "id":
                s.id = int(v)

        def typ(k: str, t: Type, o: int) -> None:
            if k in ("packet.context", "event.header", "event.context"):
                setattr(s, k.replace(".", "_"), self._struct(t, k, o))

        self._assignments(val, typ)
        if s.id in self.meta.streams:
            raise _error(f"stream id {s.id} is declared twice", off)
        self.meta.streams[s.id] = s

    def _block_event(self, off: int) -> None:
        e = EventDecl(name="")

        def val(k: str, v: Any, o: int) -> None:
            if k == "name":
                e.name = str(v)
            elif k in ("id", "stream_id", "loglevel"):
                if not isinstance(v, int):
                    raise _error(f"event {k} must be an integer, found {v!r}", o)
                setattr(e, k, v)

        def typ(k: str, t: Type, o: int) -> None:
            if k in ("fields", "context"):
                setattr(e, k, self._struct(t, k, o))

        self._assignments(val, typ)
        key = (e.stream_id, e.id)
        if key in self.meta.events:
            raise _error(f"event id {e.id} of stream {e.stream_id} is declared twice", off)
        self.meta.events[key] = e

    def _block_clock(self, off: int) -> None:
        c = ClockDecl(name="")

        def val(k: str, v: Any, o: int) -> None:
            if k in ("freq", "offset_s", "offset") and isinstance(v, int):
                setattr(c, k, v)
            elif k in ("name", "uuid", "description"):
                setattr(c, k, str(v))

        self._assignments(val, lambda k, t, o: None)
        if not c.name or c.freq <= 0:
            raise _error("a clock needs a name and a positive freq", off)
        self.meta.clocks[c.name] = c

    def _block_env(self, off: int) -> None:
        self._assignments(lambda k, v, o: self.meta.env.__setitem__(k, v), lambda k, t, o: None)

    def _block_callsite(self, off: int) -> None:
        self._assignments(lambda k, v, o: None, lambda k, t, o: None)

    def _struct(self, t: Type, what: str, off: int) -> StructT:
        if not isinstance(t, StructT):
            raise _error(f"{what} must be a struct", off)
        return t

    # -- type specifiers ------------------------------------------------------------------------
    def type_spec(self) -> Type:
        kind, txt, off = self.peek()
        if txt == "integer":
            self.i += 1
            return self._integer()
        if txt == "floating_point":
            self.i += 1
            return self._float()
        if txt == "string":
            self.i += 1
            enc = "UTF8"
            if self.accept("{"):
                attrs: dict[str, Any] = {}
                self._assignments(lambda k, v, o: attrs.__setitem__(k, v), lambda k, t, o: None)
                self.expect("}")
                enc = str(attrs.get("encoding", enc))
            return StringT(enc)
        if txt == "struct":
            self.i += 1
            return self._struct_spec()
        if txt == "enum":
            self.i += 1
            return self._enum_spec()
        if txt == "variant":
            self.i += 1
            return self._variant_spec()
        if kind == "id":
            names = [txt]
            j = 1
            while self.peek(j)[0] == "id" and " ".join(names + [self.peek(j)[1]]) in self.aliases:
                names.append(self.peek(j)[1])
                j += 1
            name = " ".join(names)
            if name in self.aliases:
                self.i += j
                return self.aliases[name]
        raise _error(f"unknown type {txt or 'at the end of the metadata'!r}", off)

    def _attrs(self) -> dict[str, tuple[Any, int]]:
        self.expect("{")
        attrs: dict[str, tuple[Any, int]] = {}
        self._assignments(lambda k, v, o: attrs.__setitem__(k, (v, o)), lambda k, t, o: None)
        self.expect("}")
        return attrs

    def _bo(self, v: Any, off: int) -> str | None:
        if v in ("native",):
            return None
        if v in ("le", "be", "network"):
            return "be" if v == "network" else v
        raise _error(f"byte_order must be le, be, network or native, found {v!r}", off)

    def _integer(self) -> IntT:
        off0 = self.peek()[2]
        a = self._attrs()
        if "size" not in a:
            raise _error("an integer needs a size", off0)
        size = a["size"][0]
        if not isinstance(size, int) or not 1 <= size <= 64:
            raise _error(f"integer size must be 1..64 bits, found {size!r}", a["size"][1])
        align = a.get("align", (8 if size % 8 == 0 else 1, 0))[0]
        if not isinstance(align, int) or align <= 0 or align & (align - 1):
            raise _error(f"integer align must be a power of two, found {align!r}", a["align"][1])
        signed = a.get("signed", (False, 0))[0]
        signed = str(signed).lower() in ("true", "1")
        bo = self._bo(*a["byte_order"]) if "byte_order" in a else None
        base_v = a.get("base", (10, 0))[0]
        base = base_v if isinstance(base_v, int) else _BASES.get(str(base_v), 10)
        enc = str(a.get("encoding", ("none", 0))[0])
        clock = None
        if "map" in a:
            mp = str(a["map"][0])
            parts = mp.split(".")
            if len(parts) != 3 or parts[0] != "clock" or parts[2] != "value":
                raise _error(f"map must be clock.<name>.value, found {mp!r}", a["map"][1])
            clock = parts[1]
        return IntT(size, align, signed, bo, base, enc if enc in ("ASCII", "UTF8") else "none", clock)

    def _float(self) -> FloatT:
        off0 = self.peek()[2]
        a = self._attrs()
        e, m = a.get("exp_dig", (0, 0))[0], a.get("mant_dig", (0, 0))[0]
        if (e, m) not in ((8, 24), (11, 53)):
            raise _error(f"only 32- and 64-bit IEEE 754 floats are supported (exp_dig={e}, "
                         f"mant_dig={m})", off0)
        align = a.get("align", (8, 0))[0]
        bo = self._bo(*a["byte_order"]) if "byte_order" in a else None
        return FloatT(e, m, align, bo)

    def _fields(self) -> list[tuple[str, Type]]:
        out: list[tuple[str, Type]] = []
        while self.peek()[1] != "}":
            if self.peek()[1] in ("typealias", "typedef"):
                self._alias()
                continue
            t = self.type_spec()
            while True:
                name = self.ident()
                out.append((name, self._dims(t)))
                if not self.accept(","):
                    break
            self.expect(";")
        return out

    def _dims(self, t: Type) -> Type:
        dims: list[Any] = []
        while self.accept("["):
            kind, txt, off = self.peek()
            v = self.value()
            if isinstance(v, int) and v < 0:
                raise _error(f"negative array length {v}", off)
            dims.append(v)
            self.expect("]")
        for d in reversed(dims):
            t = ArrayT(t, d) if isinstance(d, int) else SeqT(t, str(d))
        return t

    def _opt_name(self) -> str | None:
        if self.peek()[0] == "id" and self.peek()[1] not in ("align",):
            return self.next()[1]
        return None

    def _struct_spec(self) -> StructT:
        off = self.peek()[2]
        name = self._opt_name()
        if self.accept("{"):
            fields = self._fields()
            self.expect("}")
            min_align = 1
            if self.accept("align"):
                self.expect("(")
                min_align = self.int_value("struct align")
                self.expect(")")
            t = StructT(tuple(fields), min_align)
            if name:
                self.structs[name] = t
            return t
        if name and name in self.structs:
            return self.structs[name]
        raise _error(f"unknown struct {name!r}", off)

    def _enum_spec(self) -> EnumT:
        off = self.peek()[2]
        name = self._opt_name()
        base: Type | None = None
        if self.accept(":"):
            base = self.type_spec()
        if not self.accept("{"):
            if name and name in self.enums:
                return self.enums[name]
            raise _error(f"unknown enum {name!r}", off)
        if base is None:
            base = self.aliases.get("int")
        if not isinstance(base, IntT):
            raise _error("an enum needs an integer container type", off)
        maps: list[tuple[str, int, int]] = []
        nxt = 0
        while self.peek()[1] != "}":
            kind, txt, o = self.next()
            if kind not in ("id", "str"):
                raise _error(f"expected an enum label but found {txt!r}", o)
            label = txt[1:-1] if kind == "str" else txt
            lo = hi = nxt
            if self.accept("="):
                lo = hi = self.int_value("enum value")
                if self.accept("..."):
                    hi = self.int_value("enum range end")
            maps.append((label, lo, hi))
            nxt = hi + 1
            if not self.accept(","):
                break
        self.expect("}")
        t = EnumT(base, tuple(maps))
        if name:
            self.enums[name] = t
        return t

    def _tag(self) -> str:
        self.expect("<")
        parts = [self.ident()]
        while self.accept("."):
            parts.append(self.ident())
        self.expect(">")
        return ".".join(parts)

    def _variant_spec(self) -> VariantT:
        off = self.peek()[2]
        name = self._opt_name()
        tag = self._tag() if self.peek()[1] == "<" else None
        if self.accept("{"):
            opts = self._fields()
            self.expect("}")
            t = VariantT(tag, tuple(opts))
            if name:
                self.variants[name] = t
            return t
        if name and name in self.variants:
            return replace(self.variants[name], tag_path=tag or self.variants[name].tag_path)
        raise _error(f"unknown variant {name!r}", off)

    # -- finishing ------------------------------------------------------------------------------
    def _finish(self) -> None:
        m = self.meta
        if self.trace_bo is None:
            raise _error("the metadata has no trace block with a byte_order", 0)
        if not m.streams:
            m.streams[0] = StreamDecl()
        for (sid, _eid), e in m.events.items():
            if sid not in m.streams:
                raise _error(f"event {e.name!r} names stream {sid}, which is not declared", 0)
        for s in m.streams.values():
            s.event_header = self._auto_map(s.event_header, ("timestamp",))
            s.packet_context = self._auto_map(s.packet_context, ("timestamp_begin", "timestamp_end"))

    def _auto_map(self, st: StructT | None, names: tuple[str, ...]) -> StructT | None:
        """babeltrace2's rule: an unmapped integer named ``timestamp`` (event header) or
        ``timestamp_begin``/``timestamp_end`` (packet context) maps to the trace's only clock, or to
        an implicit 1 GHz clock when the trace declares none."""
        if st is None:
            return None
        out = []
        for n, t in st.fields:
            if n in names and isinstance(t, IntT) and t.clock is None:
                if len(self.meta.clocks) > 1:
                    raise _error(f"field {n!r} is not mapped to a clock and the trace has several", 0)
                if not self.meta.clocks:
                    self.meta.clocks["default"] = ClockDecl("default", implicit=True)
                t = replace(t, clock=next(iter(self.meta.clocks)))
            out.append((n, t))
        return StructT(tuple(out), st.min_align)


def parse_metadata(data: bytes) -> Metadata:
    """Parse TSDL metadata bytes (text or packetized)."""
    return Parser(depacketize(data)).parse()
