"""The vectorised context tracker equals a plain sequential reference on any event sequence."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from trace_parsers.model import CtxType, EventKind
from trace_parsers.systemview.convert import track_context

K = EventKind
_KINDS = [K.ISR_ENTER, K.ISR_EXIT, K.ISR_TO_SCHED, K.TASK_SWITCH_IN, K.TASK_SWITCH_OUT, K.IDLE,
          K.OVERFLOW, K.TRACE_START, K.TASK_READY, K.MARK, K.API_CALL]


def reference(kind: list[int], arg: list[int]) -> tuple[list[int], list[int]]:
    stack: list[int] = []
    task = (int(CtxType.NONE), -1)
    out_t, out_i = [], []
    for k, a in zip(kind, arg):
        if k in (K.OVERFLOW, K.TRACE_START):  # data loss, restart: nothing is known
            stack, task = [], (int(CtxType.NONE), -1)
            out_t.append(int(CtxType.NONE))
            out_i.append(-1)
            continue
        if k == K.ISR_ENTER:
            stack.append(a)
        # a switch-in closes the ISRs still open (their exits were lost); its row is the task's
        if k == K.TASK_SWITCH_IN:
            stack = []
            task = (int(CtxType.TASK), a)
        elif k == K.IDLE:
            task = (int(CtxType.IDLE), -1)
        ctx = (int(CtxType.ISR), stack[-1]) if stack else task
        if k == K.TASK_SWITCH_OUT:
            task = (int(CtxType.NONE), -1)
        if k in (K.ISR_EXIT, K.ISR_TO_SCHED) and stack:
            stack.pop()
        out_t.append(ctx[0])
        out_i.append(ctx[1])
    return out_t, out_i


@given(st.lists(st.tuples(st.sampled_from(_KINDS), st.integers(0, 40)), max_size=300))
def test_matches_reference(seq: list[tuple[int, int]]) -> None:
    kind = np.array([int(k) for k, _ in seq], dtype=np.uint8)
    arg = np.array([a for _, a in seq], dtype=np.int32)
    ct, ci = track_context(kind, arg)
    rt, ri = reference(kind.tolist(), arg.tolist())
    assert ct.tolist() == rt
    assert ci.tolist() == ri


def test_worked_example() -> None:
    kind = np.array([K.TASK_SWITCH_IN, K.ISR_ENTER, K.ISR_ENTER, K.ISR_EXIT, K.TASK_READY,
                     K.ISR_TO_SCHED, K.IDLE], dtype=np.uint8)
    arg = np.array([3, 15, 40, 0, 0, 0, 0], dtype=np.int32)
    ct, ci = track_context(kind, arg)
    assert ct.tolist() == [CtxType.TASK, CtxType.ISR, CtxType.ISR, CtxType.ISR, CtxType.ISR, CtxType.ISR,
                           CtxType.IDLE]
    assert ci.tolist() == [3, 15, 40, 40, 15, 15, -1]


def test_deep_nesting_uses_the_sort_path() -> None:
    # more than 16 open ISRs (only damaged input does this): the lexsort fallback must agree
    kinds = [K.TASK_SWITCH_IN] + [K.ISR_ENTER] * 20 + [K.MARK] + [K.ISR_EXIT] * 22 + [K.MARK, K.OVERFLOW,
                                                                                       K.ISR_ENTER, K.MARK]
    arg = [7] + list(range(100, 120)) + [0] * 23 + [0, 0, 5, 0]
    kind = np.array([int(k) for k in kinds], dtype=np.uint8)
    a = np.array(arg, dtype=np.int32)
    ct, ci = track_context(kind, a)
    rt, ri = reference(kind.tolist(), a.tolist())
    assert (ct.tolist(), ci.tolist()) == (rt, ri)
    assert ci[21] == 119 and ct[-1] == CtxType.ISR and ci[-1] == 5
