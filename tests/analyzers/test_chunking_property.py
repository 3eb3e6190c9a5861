"""One property for every analyzer (``analyzers.run.STREAMED``): however a recording is cut into chunks,
the result is the one-chunk result. Hypothesis draws the recording (tasks readied, switched, blocked;
nested ISRs readying tasks; switch-outs; idle; OVERFLOW and a restart mid-stream; test-site marks)
and the cut points; the per-recording tests (test_stream_analysis.py) put borders at every event of
real recordings."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from analyzers.run import STREAMED, analyze_chunks
from analyzers.sites import load_sites
from tests.analyzers.test_stream_analysis import _same
from trace_parsers.model import CtxType, EventKind, Isr, Task, Trace, TraceMeta, empty_events

K, C = EventKind, CtxType
SITES = load_sites()
_SITE_IDS = [s.id for s in SITES if s.name in ("ctx.yield", "ctx.switch_in", "isr.enter", "isr.task_wake",
                                                 "periodic.fast", "fft.start", "fft.stop")]
#: (kind, ctx_type, draws a task / an IRQ / a site)
_KINDS = [
    (K.TASK_SWITCH_IN, C.TASK, "task"), (K.TASK_SWITCH_OUT, C.TASK, "task"), (K.TASK_READY, C.ISR, "ready"),
    (K.TASK_READY, C.TASK, "ready"), (K.TASK_BLOCK, C.TASK, "block"), (K.ISR_ENTER, C.ISR, "irq"),
    (K.ISR_EXIT, C.ISR, "irq"), (K.ISR_TO_SCHED, C.ISR, "irq"), (K.IDLE, C.IDLE, None),
    (K.MARK, C.TASK, "site"), (K.MARK, C.ISR, "site"), (K.OVERFLOW, C.NONE, None),
    (K.TRACE_START, C.NONE, None),
]


@st.composite
def recordings(draw: st.DrawFn) -> Trace:
    n = draw(st.integers(2, 120))
    picks = draw(st.lists(st.integers(0, len(_KINDS) - 1), min_size=n, max_size=n))
    gaps = draw(st.lists(st.integers(0, 7), min_size=n, max_size=n))
    ids = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    cores = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)) if draw(st.booleans()) else [0] * n
    ev = empty_events(n)
    ev["ts"] = np.cumsum(gaps)
    ev["ts_raw"] = ev["ts"]
    ev["core"] = cores
    for i, (p, x) in enumerate(zip(picks, ids)):
        kind, ctx, what = _KINDS[p]
        if i == 0 and kind == K.TRACE_START:
            kind, ctx, what = K.IDLE, C.IDLE, None
        ev["kind"][i], ev["ctx_type"][i] = kind, ctx
        ev["ctx_id"][i] = {"task": x + 1, "irq": 15 + x, "ready": 1, "block": x + 1}.get(what, x + 1)
        if what in ("ready", "block"):
            ev["target_id"][i] = x + 1
        if what == "site":
            ev["marker"][i] = _SITE_IDS[x * 2 % len(_SITE_IDS)] if x < 2 else _SITE_IDS[-1]
    multi = len(set(cores)) > 1
    meta = TraceMeta("systemview", tick_hz=1_000_000_000, cores=2 if multi else 1)
    return Trace(ev, meta, tasks=[Task(1, "a"), Task(2, "b"), Task(3, "IDLE")],
                 isrs=[Isr(15, "SysTick"), Isr(16, "uart")])


def _cut(trace: Trace, sizes: list[int]) -> Iterator[Trace]:
    held, lo = trace.held(), 0
    for s in sizes + [len(trace)]:
        if lo >= len(trace):
            break
        yield Trace(held[lo:lo + s], trace.meta, tasks=trace.tasks, isrs=trace.isrs,
                    diagnostics=trace.diagnostics if lo == 0 else ())
        lo += s


def _check(trace: Trace, sizes: list[int]) -> None:
    one = analyze_chunks(lambda: [trace], SITES).results
    got = analyze_chunks(lambda: _cut(trace, sizes), SITES).results
    for name in STREAMED:
        assert got[name].table.equals(one[name].table), name
        assert _same(got[name].summary, one[name].summary), name


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=recordings(), sizes=st.lists(st.integers(1, 9), max_size=30))
def test_any_chunking_gives_the_one_chunk_result(trace: Trace, sizes: list[int]) -> None:
    _check(trace, sizes)


def test_the_property_sees_a_lost_carry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Injected fault: each core forgets its ISR stack at a chunk border; some drawn recording and
    chunking then differ from the one-chunk result (Hypothesis finds it)."""
    from hypothesis.errors import Flaky

    from analyzers.metrics import cpu_load

    real = cpu_load._Core._carry

    def forgetful(self: cpu_load._Core, state: tuple[int, int, list[int]]) -> None:
        real(self, (state[0], state[1], []))

    monkeypatch.setattr(cpu_load._Core, "_carry", forgetful)
    search = settings(max_examples=200, deadline=None, phases=[Phase.generate], database=None,
                      suppress_health_check=[HealthCheck.too_slow])(
        given(trace=recordings(), sizes=st.lists(st.integers(1, 9), max_size=30))(_check))
    with pytest.raises((AssertionError, Flaky)):
        search()
