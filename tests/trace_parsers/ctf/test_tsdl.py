"""TSDL metadata parser: declarations, packetized metadata, errors with metadata byte offsets."""

from __future__ import annotations

import random
import re
import struct

import pytest

from tests.conftest import ROOT
from trace_parsers.ctf.tsdl import (
    PACKET_META_MAGIC,
    ArrayT,
    EnumT,
    IntT,
    SeqT,
    StructT,
    VariantT,
    looks_like_metadata,
    parse_metadata,
    tokenize,
)
from trace_parsers.errors import TraceFormatError

from .helpers import TSDL

HEAD = "/* CTF 1.8 */ typealias integer { size = 8; } := u8; trace { byte_order = le; }; "


def test_zephyr_old_declarations() -> None:
    m = parse_metadata((TSDL / "zephyr_old.tsdl").read_bytes())
    assert m.byte_order == "le" and (m.major, m.minor) == (1, 8)
    assert list(m.clocks) == ["default"] and m.clocks["default"].implicit
    hdr = m.streams[0].event_header
    assert [n for n, _ in hdr.fields] == ["timestamp", "id"]
    assert hdr.fields[0][1] == IntT(32, 8, False, None, 10, "none", "default")  # auto-mapped
    e = m.events[(0, 0x11)]
    assert e.name == "thread_switched_in"
    name = dict(e.fields.fields)["name"]
    assert isinstance(name, ArrayT) and name.length == 20 and name.elem.encoding == "ASCII"


def test_features_declarations() -> None:
    m = parse_metadata((TSDL / "features.tsdl").read_bytes())
    assert m.byte_order == "be" and m.clocks["mono"].freq == 1_000_000
    assert (m.clocks["mono"].offset_s, m.clocks["mono"].offset) == (100, 5)
    hdr = dict(m.streams[0].event_header.fields)
    assert isinstance(hdr["id"], EnumT)
    assert hdr["id"].label(31) == "extended" and hdr["id"].label(7) == "compact"
    assert isinstance(hdr["v"], VariantT) and hdr["v"].tag_path == "id"
    f = dict(m.events[(0, 1)].fields.fields)
    assert isinstance(f["vals"], SeqT) and f["vals"].length_path == "n"
    assert isinstance(f["nested"], StructT) and f["nested"].min_align == 32
    assert dict(f["nested"].fields)["a"].base == 16  # typedef with base = hex
    assert [lab for lab, _, _ in f["e"].mappings] == ["A", "B", "C"] and f["e"].mappings[2][1:] == (10, 12)


def test_percpu_declarations() -> None:
    m = parse_metadata((TSDL / "percpu.tsdl").read_bytes())
    assert m.uuid == "5a1e0f6c-8d2b-4c3e-9f70-a1b2c3d4e5f6"
    assert m.env == {"domain": "zephyr", "tracer_name": "crosstrace-test"}
    assert [n for n, _ in m.packet_header.fields] == ["magic", "uuid", "stream_id"]
    assert dict(m.streams[0].packet_context.fields)["timestamp_begin"].clock == "k_ns"


def test_packetized_metadata_equals_text() -> None:
    text = (TSDL / "percpu.tsdl").read_bytes()
    packets = b""
    for i in range(0, len(text), 1000):  # several metadata packets, 8 bytes of padding each
        chunk = text[i:i + 1000]
        content = 37 + len(chunk)
        packets += struct.pack("<I16sIIIBBBBB", PACKET_META_MAGIC, bytes(16), 0, content * 8,
                               (content + 8) * 8, 0, 0, 0, 1, 8) + chunk + bytes(8)
    assert looks_like_metadata(packets[:64]) and looks_like_metadata(text[:64])
    a, b = parse_metadata(packets), parse_metadata(text)
    assert a.events == b.events and a.streams == b.streams and a.clocks == b.clocks
    with pytest.raises(TraceFormatError) as e:
        parse_metadata(packets[:40] + b"\xff" * 4 + packets[44:])  # first packet's sizes damaged
    assert e.value.code == "CTF_BAD_METADATA"


@pytest.mark.parametrize("body, bad, words", [
    ("event { name = a; id = 1; fields := struct { u9 x; }; };", "u9", "unknown type"),
    ("event { name = a; id = 1; fields := struct { u8 ; }; };", "; }; };", "expected a name"),
    ("typealias integer { size = 65; } := big;", "65", "1..64"),
    ("typealias integer { size = 8; align = 3; } := odd;", "3", "power of two"),
    ("typealias integer { size = 8; map = foo.bar; } := m;", "foo.bar", "clock.<name>.value"),
    ("event { name = a; id = 1; }; event { name = b; id = 1; };", "event { name = b", "declared twice"),
    ("event { name = a; id = 1; stream_id = 4; };", None, "not declared"),
    ("event { name = a; id = x; };", "x", "must be an integer"),
    ("struct nope s;", "nope", "unknown struct"),
    ("event { name = a; id = 1; } @", "@", "unexpected character"),
])
def test_metadata_errors_name_the_offset(body: str, bad: str | None, words: str) -> None:
    text = HEAD + body
    with pytest.raises(TraceFormatError) as e:
        parse_metadata(text.encode())
    assert e.value.code == "CTF_BAD_METADATA" and words in str(e.value)
    if bad is not None:
        assert e.value.offset == text.rindex(bad), (e.value.offset, text.rindex(bad))


def test_metadata_without_trace_block() -> None:
    with pytest.raises(TraceFormatError, match="no trace block"):
        parse_metadata(b"/* CTF 1.8 */ typealias integer { size = 8; } := u8;")
    with pytest.raises(TraceFormatError, match="not UTF-8"):
        parse_metadata(b"/* CTF 1.8 */ \xff\xfe")


def test_docstring_examples() -> None:
    import doctest

    import trace_parsers.ctf.tsdl as mod

    res = doctest.testmod(mod)
    assert res.attempted > 0 and res.failed == 0


def test_deeply_nested_metadata_is_our_error(tmp_path) -> None:  # noqa: ANN001
    from trace_parsers.ctf import read_ctf

    body = "struct { " * 3000 + "u8 x;" + " } y;" * 2999 + " };"
    (tmp_path / "metadata").write_text(HEAD + "event { name = a; id = 1; fields := " + body + " };")
    (tmp_path / "s").write_bytes(b"\1" * 8)
    with pytest.raises(TraceFormatError, match="nests types too deeply") as e:
        read_ctf(tmp_path)
    assert e.value.code == "CTF_BAD_METADATA"


# one token or one run of whitespace/comments per match: the tokenizer before it skipped both in
# one match (kept here as the reference the faster one must equal)
_REFERENCE = re.compile(r"""
    (?P<ws>\s+|/\*.*?\*/|//[^\n]*)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<num>0[xX][0-9a-fA-F]+[uUlL]*|[0-9]+[uUlL]*)
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>:=|\.\.\.|->|[{}()\[\];:=,<>.+\-*])
""", re.S | re.X)


def reference_tokens(text: str) -> list[tuple[str, str, int]] | int:
    """The tokens, or the offset of the first character no token can start with."""
    out, pos = [], 0
    while pos < len(text):
        m = _REFERENCE.match(text, pos)
        if m is None:
            return pos
        if m.lastgroup != "ws":
            out.append((m.lastgroup or "", m.group(), pos))
        pos = m.end()
    return out


def tokens_or_offset(text: str) -> list[tuple[str, str, int]] | int:
    try:
        return tokenize(text)
    except TraceFormatError as e:
        return e.offset if e.offset is not None else -1


@pytest.mark.parametrize("text, bad", [
    ("a /* b */ @ /* c */ d", 10),  # not one comment from '/* b' to 'c */'
    ("a // x\n@ y", 7),              # no token 'x' from inside the comment
    ("a /* open", 2),                # a comment never closed
    ("x" + " " * 5000 + "@", 5001),
])
def test_tokenizer_errors_where_the_reference_does(text: str, bad: int) -> None:
    assert reference_tokens(text) == bad
    assert tokens_or_offset(text) == bad


def test_tokenizer_equals_the_reference() -> None:
    zephyr = (ROOT / "captures/qemu_netduinoplus2/zephyr/calib-ctf/ref/metadata").read_text()
    texts = [zephyr] + [p.read_text() for p in sorted(TSDL.glob("*.tsdl"))]
    rnd = random.Random(18)
    pieces = ["a", "b1", "_x", " ", "\n", "\t", "/*", "*/", "//", "*", "/", '"', "\\", "0x1F", "12u",
              "{", "}", ";", ":=", "...", "->", "@", "$", ".", "-", "+", "=", ",", "**", "*/*"]
    texts += ["".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 40))) for _ in range(5000)]
    errors = 0
    for t in texts:
        want = reference_tokens(t)
        errors += isinstance(want, int)
        assert tokens_or_offset(t) == want, t
    assert 1000 < errors < 4000  # both kinds of text were tried
