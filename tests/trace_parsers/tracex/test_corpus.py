"""The three TraceX sample traces, event for event against TraceX 6.2.1.0's raw dumps and facts.json."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from trace_parsers import open_trace
from trace_parsers.model import CtxType, EventKind, validate
from trace_parsers.tracex import read_raw, read_tracex
from trace_parsers.tracex.format import event_name
from trace_parsers.tracex.stats import tracex_statistics, tracex_view

from ...conftest import corpus_facts
from .helpers import CORPUS_FILES, dump_path, parse_dump

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module", params=CORPUS_FILES)
def case(request, trx_corpus):
    path = trx_corpus / request.param
    return path, corpus_facts("tracex")[request.param], parse_dump(dump_path(path))


def test_header_layout_and_objects(case):
    path, facts, _ = case
    raw = read_raw(path)
    hdr = facts["layout"]["header"]
    assert raw.header["timer_valid_mask"] == int(hdr["timer_mask"], 16)
    assert raw.header["trace_base_address"] == int(hdr["base"], 16)
    assert raw.header["buffer_current_pointer"] == int(hdr["buf_cur"], 16)
    lay = raw.layout()
    for key in ("registry_slots", "event_slots", "current_index", "first_null_slot", "buffer_wrapped",
                "bytes_after_buffer_end"):
        assert lay[key] == facts["layout"][key], key
    assert lay["endianness"] == facts["layout"]["endianness"]
    objs = [(o.slot, o.type, o.name, o.address, o.param_1, o.param_2, o.available) for o in raw.objects]
    want = [(o["slot"], o["type"], o["name"], int(o["address"], 16), o["param1"], o["param2"], o["available"])
            for o in facts["objects"]["list"]]
    assert objs == want
    assert [o.type_name for o in raw.objects] == [o["type_name"] for o in facts["objects"]["list"]]


def test_events_equal_tracex_dump_row_by_row(case):
    path, facts, dump = case
    raw = read_raw(path)
    view = tracex_view(raw)
    d = dump["events"]
    assert len(view) == d["index"].size == dump["stats"]["total_events"]
    assert view.fake_running == 0  # none in these files (facts.json)
    assert np.array_equal(view.event_id, d["event_id"])
    assert np.array_equal(view.context, d["context"])
    assert np.array_equal(view.next_context, d["next_context"])
    assert np.array_equal(view.relative_ticks, d["relative"])
    assert np.array_equal(view.time_stamp, d["time_stamp"])
    for k in range(4):
        assert np.array_equal(view.info[:, k], d[f"info{k + 1}"]), k
    assert np.array_equal(raw.raw_event_id, d["raw_event"])
    assert np.array_equal(raw.raw_priority, d["raw_priority"])
    assert np.array_equal(view.priority_inversion, d["pi"])
    assert np.array_equal(view.bad_priority_inversion, d["bad_pi"])


def test_ordered_events_sha256_and_counts(case):
    path, facts, _ = case
    raw = read_raw(path)
    rec = raw.records().astype([(n, "<u4") for n in raw.records().dtype.names])
    assert hashlib.sha256(rec.tobytes()).hexdigest() == facts["events"]["ordered_events_sha256"]
    ev = facts["events"]
    ids, counts = np.unique(raw.event_id, return_counts=True)
    assert {f"{i} {event_name(int(i))}": int(c) for i, c in zip(ids, counts)} == ev["by_event_id"]
    assert raw.direction == ev["timestamp_direction"]
    assert raw.timer_wraps == ev["timestamp_wraps"]
    assert int(raw.ts_masked[0]) == ev["first_timestamp_masked"]
    assert int(raw.ts_masked[-1]) == ev["last_timestamp_masked"]
    assert int(raw.relative_ticks[-1]) == ev["relative_ticks_last"]


def test_statistics_equal_tracex(case):
    path, facts, dump = case
    st = tracex_statistics(read_raw(path))
    ref = facts["tracex_statistics"]
    for key in ("context_switches", "thread_preemptions", "time_slices", "thread_suspensions",
                "thread_resumptions", "interrupts", "nested_interrupts", "max_relative_ticks"):
        assert getattr(st, key) == ref[key] == dump["stats"][key], key
    assert st.total_events == ref["total_events_including_fake_RUNNING"]
    assert st.fake_running == ref["fake_RUNNING_inserted"]
    assert f"{st.priority_inversions}/{st.bad_priority_inversions}" == \
        ref["priority_inversions_deterministic/undeterministic"]
    assert st.execution_ticks == ref["execution_ticks_by_context"] == dump["execution"]
    assert [(t.address, t.events, t.name) for t in st.threads] == dump["threads"]
    assert sorted(st.popular_services) == sorted(dump["popular"])


def test_common_model(case):
    path, facts, _ = case
    tr = open_trace(path)
    assert validate(tr) == []
    assert tr.meta.source_format == "tracex" and tr.meta.ts_unit == "ticks" and tr.meta.tick_hz is None
    assert any(d.code == "TRX_NO_TICK_HZ" for d in tr.diagnostics)
    raw = tr.meta.extra["tracex_raw"]
    ev = tr.events
    assert len(tr) == facts["events"]["count_in_buffer"]
    assert np.array_equal(ev["ts"], raw.relative_ticks)  # ts in ticks = TraceX relative time
    assert np.array_equal(ev["src_id"], raw.event_id)
    assert np.array_equal(ev["value"], raw.info(1).astype(np.int64))
    assert np.array_equal((ev["src_offset"] - raw.buffer_offset) % 32, np.zeros(len(tr)))
    ctx = raw.context
    assert np.count_nonzero(ev["ctx_type"] == CtxType.ISR) == facts["events"]["by_context"].get("ISR", 0)
    assert np.count_nonzero(ev["ctx_type"] == CtxType.TASK) == facts["events"]["by_context"].get("THREAD", 0)
    task_rows = ev["ctx_type"] == CtxType.TASK
    handles = np.array([t.native_handle for t in tr.tasks])
    assert np.array_equal(handles[ev["ctx_id"][task_rows]], ctx[task_rows])
    threads = [o for o in facts["objects"]["list"] if o["type_name"] == "THREAD"]
    assert [t.name for t in tr.tasks] == [o["name"] for o in threads]
    res = ev["src_id"] == 1
    assert np.all(ev["kind"][res] == EventKind.TASK_READY)
    assert np.array_equal(handles[ev["target_id"][res]], raw.info(1)[res])


def test_tick_hz_gives_ns(trx_corpus):
    tr = read_tracex(trx_corpus / CORPUS_FILES[0], tick_hz=1_000_000)
    assert tr.meta.ts_unit == "ns"
    assert tr.duration == 156_206 * 1000
    assert not any(d.code == "TRX_NO_TICK_HZ" for d in tr.diagnostics)
    assert validate(tr) == []
