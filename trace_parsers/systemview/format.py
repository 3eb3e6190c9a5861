"""SystemView wire layout: SEGGER's event numbers and names (``SYSVIEW_EVTID_*``) and container facts.

Spec: ``systemview.md`` §3 (packets) and §4 (container). Only numbers and names live here; the byte
loop is in the Rust core (``trace_parsers._core``, driven by :mod:`.decode`).
"""

from __future__ import annotations

import enum

#: Start-of-stream sync: 10 zero bytes, then TRACE_START.
SYNC = b"\x00" * 10
#: Optional 5-byte prefix some writers put after the text header (systemview.md §4).
PREFIX_MAGIC = b"\xBF\x88\xEE\xAB"
#: OS-defined ids start here; module ids start at MODULE_EVENT_OFFSET; user ids at 1024.
OS_ID_FIRST = 32
MODULE_EVENT_OFFSET = 512
USER_ID_FIRST = 1024


class EvtId(enum.IntEnum):
    """System event ids 0-31 (``SYSVIEW_EVTID_*``)."""

    NOP = 0
    OVERFLOW = 1
    ISR_ENTER = 2
    ISR_EXIT = 3
    TASK_START_EXEC = 4
    TASK_STOP_EXEC = 5
    TASK_START_READY = 6
    TASK_STOP_READY = 7
    TASK_CREATE = 8
    TASK_INFO = 9
    TRACE_START = 10
    TRACE_STOP = 11
    SYSTIME_CYCLES = 12
    SYSTIME_US = 13
    SYSDESC = 14
    MARK_START = 15  #: 2.42: USER_START
    MARK_STOP = 16  #: 2.42: USER_STOP
    IDLE = 17
    ISR_TO_SCHEDULER = 18
    TIMER_ENTER = 19
    TIMER_EXIT = 20
    STACK_INFO = 21
    MODULEDESC = 22
    DATA_SAMPLE = 23  #: >= 3.56
    INIT = 24
    NAME_RESOURCE = 25
    PRINT_FORMATTED = 26
    NUMMODULES = 27
    END_CALL = 28
    TASK_TERMINATE = 29
    UNUSED_30 = 30
    EX = 31


class ExSubId(enum.IntEnum):
    """Sub-events of ``EvtId.EX`` (3.20+)."""

    MARK = 0
    NAME_MARKER = 1
    HEAP_DEFINE = 2
    HEAP_ALLOC = 3
    HEAP_ALLOC_EX = 4
    HEAP_FREE = 5
    REGISTER_DATA = 6


#: Fixed payload fields of ids < 24 (no length field): names in wire order; "$" = string.
FIXED_LAYOUT: dict[int, tuple[str, ...]] = {
    0: (), 1: ("DropCount",), 2: ("IrqId",), 3: (), 4: ("TaskId",), 5: (), 6: ("TaskId",),
    7: ("TaskId", "Cause"), 8: ("TaskId",), 9: ("TaskId", "Prio", "$Name"), 10: (), 11: (),
    12: ("Cycles",), 13: ("UsLow", "UsHigh"), 14: ("$Desc",), 15: ("MarkerId",), 16: ("MarkerId",),
    17: (), 18: (), 19: ("TimerId",), 20: (), 21: ("TaskId", "StackBase", "StackSize", "StackUsage"),
    22: ("ModuleId", "EventOffset", "$Desc"), 23: ("DataId", "ValueBits"),
}

#: Ids whose first field is a shrunk id (systemview.md §3.6): addr = RAMBase + (id << IdShift).
SHRUNK_FIRST_FIELD = frozenset({4, 6, 7, 8, 9, 19, 21, 25, 29})

#: Metadata-only packets: kept as OTHER rows (src_id = id) and in ``meta.extra``.
METADATA_IDS = frozenset({9, 12, 14, 21, 22, 24, 25, 27})

#: PRINT_FORMATTED Options -> level name.
PRINT_LEVELS = {0: "log", 1: "warning", 2: "error"}


def evt_name(evt_id: int) -> str:
    """SEGGER name of a system id, ``OS/USER`` for the rest."""
    try:
        return EvtId(evt_id).name
    except ValueError:
        return "USER/OS"
