"""The kernel-state rules, written once: who owns each core, ISR nesting per core, and what resets it.

Every analyzer that needs to know which context ran (CPU load, per-ISR durations and nesting, the
per-task running time, in memory or over chunks) reads it from :func:`kernel_pass`, the Rust core's
one walk over a core's events (``trace_parsers/_core/src/kstate.rs``), and nothing else. The rules
(docs/methodology.md, "Kernel state"), for every format:

- ``ISR_ENTER`` pushes an interrupt, ``ISR_EXIT``/``ISR_TO_SCHED`` pops one; never below empty
  (an exit whose entry the recording does not hold is ignored);
- a **data-loss marker** (``OVERFLOW``) empties the ISR stack and makes the running task unknown
  from the last event before it until a switch-in re-establishes it;
- a **switch-in** (``TASK_SWITCH_IN``) on a core with ISRs open closes them there (their exit
  records were lost): they are reported and their instances excluded, never measured to a later exit;
- ``IDLE``, and ``TASK_SWITCH_OUT`` with no ISR open, make the core idle;
- a **restart** (``TRACE_START`` after the first event) resets the state like a data-loss marker;
- the owner after an event is the innermost open ISR, else the running task.

>>> from trace_parsers.model import EventKind as K
>>> k = np.array([K.TASK_SWITCH_IN, K.ISR_ENTER, K.ISR_ENTER, K.TASK_SWITCH_IN, K.ISR_EXIT, K.ISR_ENTER])
>>> p = kernel_pass(k, np.array([7, 3, 4, 8, 0, 5]))
>>> p.depth.tolist(), p.owner_kind.tolist(), p.owner_id.tolist()
([0, 1, 2, 0, 0, 1], [2, 3, 3, 2, 2, 3], [7, 3, 4, 8, 8, 5])
>>> p.state
(2, 8, [5])
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from trace_parsers import _core
from trace_parsers.model import EventKind

K = EventKind

#: kinds that end the known state: the ISR stack is emptied at them
RESETS = (K.OVERFLOW, K.TASK_SWITCH_IN, K.TRACE_START)
#: kinds after which the running task is unknown until the next switch-in (data loss, restart)
LOSSES = (K.OVERFLOW, K.TRACE_START)

_LOSS = np.zeros(256, dtype=bool)
_LOSS[list(LOSSES)] = True

#: what owns a core after an event (``Pass.owner_kind``)
OWNER_UNKNOWN, OWNER_IDLE, OWNER_TASK, OWNER_ISR = 0, 1, 2, 3
#: the state carried between chunks: owner kind of the running task, its id, the open IRQs (outermost first)
State = tuple[int, int, list[int]]
#: the state before a recording's first event: unknown task, no ISR open
START: State = (OWNER_UNKNOWN, -1, [])


def is_loss(kind: np.ndarray) -> np.ndarray:
    """Mask of the events after which the running task is unknown (:data:`LOSSES`)."""
    return _LOSS[np.asarray(kind)]


class IsrEntries(NamedTuple):
    """The ISR entries of one core's rows (:func:`isr_rows`), in order."""

    idx: np.ndarray  #: index of each ``ISR_ENTER`` in the rows
    depth: np.ndarray  #: nesting depth it opened (1: not nested)
    end: np.ndarray  #: index of its own exit; else OPEN, BY_SWITCH_IN or BY_LOSS
    closer: np.ndarray  #: index of the reset that closed it (-1 if none)
    final_depth: int  #: the depth after the last row (carried to the next chunk)


class Pass(NamedTuple):
    """:func:`kernel_pass`'s answer. Per event: ``owner_kind``/``owner_id`` (who owns the core from
    it to the next event: task id, IRQ number, -1 for idle and unknown) and ``depth`` (ISR nesting
    after it). Per ``ISR_ENTER`` (:class:`IsrEntries`): ``ent``. ``state``: after the last event,
    ``(owner kind of the task, task id, open IRQs outermost first)``, to carry to the next chunk."""

    owner_kind: np.ndarray
    owner_id: np.ndarray
    depth: np.ndarray
    ent: IsrEntries
    state: State


def kernel_pass(kind: np.ndarray, ctx: np.ndarray | None = None,
                state: State = START) -> Pass:
    """The kernel-state pass over one core's events ``kind`` (any kinds; those the rules do not
    name leave the state as it is) with their ``ctx`` ids (task id of a switch-in, IRQ of an ISR
    entry), from the carried ``state``. The carried open ISRs have no entry here: a chunk that needs
    their exits replays them as ``ISR_ENTER`` events in front of its own."""
    k = np.ascontiguousarray(kind, dtype=np.uint8)
    c = (np.zeros(k.size, np.int64) if ctx is None
         else np.ascontiguousarray(ctx, dtype=np.int64))
    r = _core.kstate_pass((k.ctypes.data, k.size), (c.ctypes.data, c.size),
                          (int(state[0]), int(state[1]), [int(x) for x in state[2]]))
    i8 = np.dtype("=i8")
    depth = np.frombuffer(r["depth"], i8)
    ent = IsrEntries(np.frombuffer(r["ent_idx"], i8), np.frombuffer(r["ent_depth"], i8),
                     np.frombuffer(r["ent_end"], i8), np.frombuffer(r["ent_closer"], i8),
                     int(depth[-1]) if depth.size else len(state[2]))
    task_kind, task_id, stack = r["state"]
    return Pass(np.frombuffer(r["owner_kind"], np.uint8), np.frombuffer(r["owner_id"], i8), depth, ent,
                (task_kind, task_id, list(stack)))


#: why an ISR entry has no exit (``IsrEntries.end`` below 0)
OPEN, BY_SWITCH_IN, BY_LOSS = -1, -2, -3
#: the drop-log reasons of entries closed without their exit
CLOSED_REASONS = {BY_SWITCH_IN: "isr_closed_by_switch_in", BY_LOSS: "isr_closed_by_data_loss"}

_ISR_SW = np.zeros(256, dtype=bool)  # kind -> an ISR event or a switch-in
_ISR_SW[[K.ISR_ENTER, K.ISR_EXIT, K.ISR_TO_SCHED, K.TASK_SWITCH_IN]] = True
_ISR_SW_LOSS = _ISR_SW | _LOSS


def isr_rows(kind: np.ndarray, core: np.ndarray | None, c: int) -> np.ndarray:
    """The rows the ISR state of core ``c`` follows: its ISR events and switch-ins, and every
    core's data-loss markers (``core`` None: every row is on core ``c``)."""
    kind = np.asarray(kind)
    if core is None:
        return np.flatnonzero(_ISR_SW_LOSS[kind])
    return np.flatnonzero(((np.asarray(core) == c) & _ISR_SW[kind]) | _LOSS[kind])


def isr_entries(kind: np.ndarray) -> IsrEntries:
    """Each ISR entry of one core's rows with its own exit, or what closed it without one.

    >>> from trace_parsers.model import EventKind as K
    >>> k = np.array([K.ISR_ENTER, K.TASK_SWITCH_IN, K.ISR_ENTER, K.ISR_EXIT, K.ISR_ENTER, K.OVERFLOW,
    ...               K.ISR_ENTER])
    >>> e = isr_entries(k)
    >>> e.idx.tolist(), e.depth.tolist(), e.end.tolist(), e.closer.tolist(), e.final_depth
    ([0, 2, 4, 6], [1, 1, 1, 1], [-2, 3, -3, -1], [1, -1, 5, -1], 1)
    """
    return kernel_pass(kind).ent


#: ``count_switches``' mark of an unknown running context (before the first switch-in, after a loss)
UNKNOWN = -3


def count_switches(kind: np.ndarray, ctx_id: np.ndarray, prev: int | None = None) -> tuple[int, int | None]:
    """Context switches in one core's events (a core's switch-ins and idles, every core's losses):
    a switch-in or idle whose context differs from a *known* running one (idle is a context).
    The first switch-in of the recording and the first after a data loss only establish the
    state. ``prev``: the context running before these events (None: unknown). Returns the count
    and the context running after them.

    >>> from trace_parsers.model import EventKind as K
    >>> k = np.array([K.TASK_SWITCH_IN, K.TASK_SWITCH_IN, K.IDLE, K.OVERFLOW, K.TASK_SWITCH_IN,
    ...               K.TASK_SWITCH_IN])
    >>> count_switches(k, np.array([1, 2, -1, -1, 1, 1]))
    (2, 1)
    """
    kind = np.asarray(kind)
    sel = (kind == K.TASK_SWITCH_IN) | (kind == K.IDLE) | _LOSS[kind]
    k = kind[sel]
    who = np.where(k == K.IDLE, -2, np.where(_LOSS[k], UNKNOWN, np.asarray(ctx_id)[sel].astype(np.int64)))
    if not who.size:
        return 0, prev
    before = np.concatenate(([UNKNOWN if prev is None else prev], who[:-1]))
    n = int(np.count_nonzero((before != UNKNOWN) & (who != UNKNOWN) & (who != before)))
    last = int(who[-1])
    return n, None if last == UNKNOWN else last
