"""Property tests: arbitrary bytes never raise anything but TraceError (or decode)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from trace_parsers.errors import TraceError
from trace_parsers.model import validate
from trace_parsers.tracex import sniff
from trace_parsers.tracex.convert import to_trace
from trace_parsers.tracex.decode import decode_bytes
from trace_parsers.tracex.stats import tracex_statistics

from .helpers import build_trx

A, B = 0x1000, 0x2000
VALID = build_trx(np.array([[A, 5, 69, 10 * i, 1, 2, 3, B if i % 3 else 0] for i in range(12)], np.uint32),
                  objects=[(1, A, "a", 0, 0), (1, B, "b", 0, 0)], n_slots=16)


def _check(data: bytes) -> None:
    sniff(data[:4096], None)
    try:
        raw = decode_bytes(data, "fuzz.trx", on_corrupt="skip")
    except TraceError:
        return
    tr = to_trace(raw)
    assert validate(tr) == []
    tracex_statistics(raw)


@given(st.binary(max_size=600))
def test_random_bytes(data):
    _check(data)


@given(st.sampled_from([b"BTXT", b"TXTB"]), st.binary(max_size=800))
def test_random_bytes_after_magic(magic, data):
    _check(magic + data)


@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), max_size=12),
       st.integers(0, len(VALID)))
def test_mutated_buffer(edits, cut):
    b = bytearray(VALID)
    for off, val in edits:
        b[off] = val
    _check(bytes(b[:cut]) if cut > 4 else bytes(b))


@given(st.sampled_from([b":", b"S1", b"S3", b"0a"]), st.text("0123456789ABCDEFS:\n ", max_size=300))
def test_random_text_encodings(prefix, text):
    _check(prefix + text.encode())
