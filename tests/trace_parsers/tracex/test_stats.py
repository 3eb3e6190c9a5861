"""TraceX's derived view on hand-built traces: next context, nested interrupts, synthetic RUNNING
rows, execution profile, preemptions, relinquish look-ahead, switch rows for the model."""

from __future__ import annotations

import numpy as np
import pytest

from trace_parsers.model import CtxType, EventKind, validate
from trace_parsers.tracex import format as fmt
from trace_parsers.tracex.decode import decode_bytes
from trace_parsers.tracex.stats import tracex_statistics, tracex_view, with_switch_events

from .helpers import build_trx
from .test_synthetic import read_tracex_bytes

A, B = 0x1000, 0x2000
ISR, INIT = fmt.CTX_ISR, fmt.CTX_INIT
THREADS = [(1, A, "alpha", 0x8000, 1024), (1, B, "beta", 0x9000, 1024)]


def ev(ctx, eid, i1=0, i2=0, i3=0, i4=0, prio=0):
    return [ctx, prio, eid, 0, i1, i2, i3, i4]


def scenario():
    """A suspends to B; a nested interrupt resumes A; A suspends to idle; B runs later."""
    rows = [
        ev(A, 69, prio=5),
        ev(A, fmt.TX_TRACE_THREAD_SUSPEND, i1=A, i4=B, prio=5),
        ev(B, 83, prio=3),
        ev(ISR, fmt.TX_TRACE_ISR_ENTER, prio=B),   # priority word = interrupted thread (B)
        ev(ISR, fmt.TX_TRACE_ISR_ENTER, prio=B),   # nested
        ev(ISR, fmt.TX_TRACE_ISR_EXIT, prio=B),
        ev(ISR, fmt.TX_TRACE_THREAD_RESUME, i1=A, i4=A, prio=B),
        ev(ISR, fmt.TX_TRACE_ISR_EXIT, prio=B),
        ev(A, 69, prio=5),
        ev(A, fmt.TX_TRACE_THREAD_SUSPEND, i1=A, i4=0, prio=5),  # system goes idle
        ev(B, 68, prio=3),
    ]
    w = np.array(rows, dtype=np.uint32)
    w[:, 3] = np.arange(len(rows)) * 10  # up-counting, 10 ticks apart
    return build_trx(w, objects=THREADS)


def test_next_context_and_synthetic_running():
    v = tracex_view(decode_bytes(scenario()))
    # a RUNNING row (idle) is inserted after the suspend-to-idle: next context 0 is neither the
    # suspending thread nor the next event's thread
    assert v.event_id.tolist() == [69, 2, 83, 3, 3, 4, 1, 4, 69, 2, fmt.TX_TRACE_RUNNING, 68]
    assert v.source.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, -1, 10]
    assert v.next_context.tolist() == [A, B, B, ISR, ISR, ISR, ISR, A, A, 0, 0, B]
    assert v.context[10] == 0 and v.relative_ticks[10] == 90  # gap 10 <= 12: same time as event 9
    assert v.fake_running == 1


def test_statistics_by_hand():
    st = tracex_statistics(decode_bytes(scenario()))
    assert st.total_events == 12 and st.fake_running == 1
    # switches: A->B (1), ISR exit B->A (7), A->idle (9), idle again on the RUNNING row, idle->B (10)
    assert st.context_switches == 5
    assert st.interrupts == 2 and st.nested_interrupts == 1
    assert st.thread_preemptions == 1  # the in-ISR resume of A while B was running
    assert st.thread_suspensions == 2 and st.thread_resumptions == 1 and st.time_slices == 0
    assert st.execution_ticks == {"alpha": 30, "beta": 20, "Idle System": 10, "Interrupt": 40}
    assert sum(st.execution_ticks.values()) == st.max_relative_ticks == 100
    assert [t.events for t in st.threads] == [4, 2]


def test_relinquish_lookahead_and_time_slice():
    rows = [
        ev(A, 69, prio=5),
        ev(A, fmt.TX_TRACE_THREAD_RELINQUISH, i1=0, i2=0, prio=5),  # no next thread recorded
        ev(ISR, 36, prio=0),  # old ThreadX: no interrupted-thread word
        ev(B, 68, prio=5),
        ev(B, fmt.TX_TRACE_THREAD_RELINQUISH, i2=A, prio=5),  # next thread recorded in I2
        ev(A, 69, prio=5),
        ev(A, fmt.TX_TRACE_TIME_SLICE, i1=B, prio=5),
        ev(B, 69, prio=5),
    ]
    w = np.array(rows, dtype=np.uint32)
    w[:, 3] = 100 + np.arange(len(rows)) * 100
    v = tracex_view(decode_bytes(build_trx(w, objects=THREADS)))
    assert v.next_context[1] == B  # look-ahead: B runs next and no resume/suspend of B explains it
    assert v.fake_running == 1 and v.context[2] == B  # RUNNING(B) between the relinquish and the ISR
    assert v.next_context[5] == A  # I2 of the second relinquish
    st = tracex_statistics(v)
    assert st.context_switches == 3
    assert st.thread_preemptions == 1  # the time slice hands A's CPU to B
    assert st.time_slices == 0  # TraceX compares a stale next context here (quirk reproduced)
    assert st.interrupts == 1  # an ISR-context event without ISR_ENTER
    # newer ThreadX: the ISR's priority word names the interrupted thread and overrides the look-ahead
    w[2, 1] = A
    assert tracex_view(decode_bytes(build_trx(w, objects=THREADS))).next_context[1] == A


def test_priority_inversion_windows():
    M = 0x7000
    objs = THREADS + [(1, 0x3000, "mid", 0xA000, 1024), (5, M, "mutex", 1, 0)]
    rows = [
        ev(B, 69, prio=20),                                           # B (low) owns the mutex
        ev(A, fmt.TX_TRACE_MUTEX_GET, i1=M, i3=B, prio=2),            # A (high) blocks on B's mutex
        ev(B, 69, prio=20),
        ev(0x3000, 69, prio=10),                                      # a middle thread runs: undeterministic
        ev(B, fmt.TX_TRACE_MUTEX_PUT, i1=M, i3=1, prio=20),
        ev(A, 69, prio=2),
        ev(A, fmt.TX_TRACE_MUTEX_GET, i1=M, i3=B, prio=2),            # second window
        ev(B, fmt.TX_TRACE_MUTEX_PUT, i1=M, i3=1, prio=20),           # released: deterministic end
        ev(A, 69, prio=2),
    ]
    w = np.array(rows, dtype=np.uint32)
    w[:, 3] = np.arange(len(rows)) * 5
    v = tracex_view(decode_bytes(build_trx(w, objects=objs)))
    assert (v.priority_inversions, v.bad_priority_inversions) == (2, 1)
    assert v.bad_priority_inversion[1] == 5  # first event of the blocked thread after the window
    assert v.priority_inversion[6] == 8


def test_with_switch_events_adds_task_switch_in_rows():
    tr = read_tracex_bytes(scenario(), tick_hz=1000)
    st = tracex_statistics(tr)
    tr2 = with_switch_events(tr)
    assert validate(tr2) == []
    sw = tr2.events[tr2.events["kind"] == EventKind.TASK_SWITCH_IN]
    assert sw.shape[0] == st.context_switches
    assert sw["ctx_type"].tolist() == [CtxType.TASK, CtxType.TASK, CtxType.IDLE, CtxType.IDLE, CtxType.TASK]
    assert sw["ctx_id"].tolist() == [1, 0, -1, -1, 1]
    assert len(tr2) == len(tr) + st.context_switches
    # each switch row directly follows the event it belongs to
    k = np.flatnonzero(tr2.events["kind"] == EventKind.TASK_SWITCH_IN)
    assert np.array_equal(tr2.events["src_offset"][k], tr2.events["src_offset"][k - 1])
    # the reader option gives the same rows; recorded rows stay those that are not switch rows
    tr3 = read_tracex_bytes(scenario(), tick_hz=1000, switches=True)
    assert np.array_equal(tr3.events, tr2.events)
    rec = tr3.events[tr3.events["kind"] != EventKind.TASK_SWITCH_IN]
    assert np.array_equal(rec, tr.events)
    with pytest.raises(TypeError):
        with_switch_events(tr.select(np.ones(len(tr), bool)).__class__(tr.events, tr.meta.replace(extra={})))
