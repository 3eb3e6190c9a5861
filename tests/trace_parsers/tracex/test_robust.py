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


_CTXS = [A, B, 0x3000, 0xFFFFFFFF, 0xF0F0F0F0]
_IDS = [1, 2, 3, 4, 5, 6, 52, 57, 69, 100, 109, 4097, 4200, 77]
_WORDS = [0, 1, A, B, 0x3000, 0xFFFFFFFF]


@given(st.lists(st.tuples(st.sampled_from(_CTXS), st.sampled_from(_IDS), st.sampled_from(_WORDS),
                          st.sampled_from(_WORDS), st.sampled_from(_WORDS), st.sampled_from(_WORDS),
                          st.sampled_from([0, 2, 9, A, 0x80030005])),
                min_size=1, max_size=40),
       st.integers(0, 39))
def test_random_event_streams_keep_invariants(rows, cur):
    """Any mix of contexts and scheduling events: the TraceX view and the model stay consistent."""
    from trace_parsers.model import EventKind
    from trace_parsers.tracex.stats import tracex_view, with_switch_events

    w = np.array([[c, p, e, 10 * k, a, b, x, y] for k, (c, e, a, b, x, y, p) in enumerate(rows)], np.uint32)
    data = build_trx(w, objects=[(1, A, "a", 0, 0), (1, B, "b", 0, 0), (5, 0x5000, "m", 1, 0)],
                     n_slots=len(rows), cur=cur % len(rows))
    raw = decode_bytes(data)
    assert len(raw) == len(rows)
    v = tracex_view(raw)
    assert len(v) == len(rows) + v.fake_running
    assert np.all(v.event_id[v.source < 0] == 6)
    assert np.array_equal(v.source[v.source >= 0], np.arange(len(rows)))
    stats = tracex_statistics(v)
    assert stats.thread_suspensions == int(np.count_nonzero(raw.event_id == 2))
    assert 0 <= stats.nested_interrupts <= stats.interrupts
    tr = to_trace(raw, tick_hz=100)
    assert validate(tr) == []
    tr2 = with_switch_events(tr, v)
    assert validate(tr2) == []
    assert int(np.count_nonzero(tr2.events["kind"] == EventKind.TASK_SWITCH_IN)) == \
        stats.context_switches + int(np.count_nonzero(tr.events["kind"] == EventKind.TASK_SWITCH_IN))
