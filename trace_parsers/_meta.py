"""The side tables, enums and metadata of the event model, without NumPy.

:mod:`trace_parsers.model` re-exports every name here; this module exists so that a process that
never builds an events table (``crosstrace info`` on a small file, an error message) does not pay
for importing NumPy.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any

#: Bumped on any incompatible change to the columns or side tables below.
SCHEMA_VERSION = 1
#: values of ``TraceMeta.source_kind``
SOURCE_KINDS = ("trace", "logic")


def int_ticks_to_ns(ticks: int, tick_hz: int) -> int:
    """:func:`~trace_parsers.model.ticks_to_ns` of one tick count (``ticks >= 0``) as a Python int.

    >>> int_ticks_to_ns(7, 3)   # 7 ticks at 3 Hz = 2.333 s
    2333333333
    """
    hz = int(tick_hz)
    if hz <= 0:
        raise ValueError(f"tick_hz must be a positive integer, got {tick_hz!r}")
    q, r = divmod(int(ticks), hz)
    return q * 1_000_000_000 + r * 1_000_000_000 // hz


def signed_ticks_to_ns_int(ticks: int, tick_hz: int) -> int:
    """:func:`~trace_parsers._edges.signed_ticks_to_ns` of one tick count that may be negative."""
    t = int(ticks)
    return int_ticks_to_ns(t, tick_hz) if t >= 0 else -int_ticks_to_ns(-t, tick_hz)


class EventKind(enum.IntEnum):
    """What happened. Numbering is append-only: never renumber, only add at the end."""

    INVALID = 0
    TASK_SWITCH_IN = 1  #: a task starts (or resumes) executing on ``core``
    TASK_SWITCH_OUT = 2  #: the running task stops executing
    TASK_READY = 3  #: ``target_id`` becomes ready
    TASK_BLOCK = 4  #: ``target_id`` (or the running task) blocks/suspends
    ISR_ENTER = 5  #: interrupt ``ctx_id`` entered
    ISR_EXIT = 6  #: interrupt exited, back to the interrupted context
    ISR_TO_SCHED = 7  #: interrupt exited into the scheduler (a switch follows)
    MARK_START = 8  #: start of an instrumentation interval ``marker``
    MARK_STOP = 9  #: end of an instrumentation interval ``marker``
    MARK = 10  #: point instrumentation event ``marker`` (CT site), payload in ``value``
    EDGE_RISE = 11  #: logic channel ``marker`` went 0 -> 1
    EDGE_FALL = 12  #: logic channel ``marker`` went 1 -> 0
    OVERFLOW = 13  #: data-loss gap; ``value`` = source's drop counter if it has one
    TRACE_START = 14  #: recording (re)started
    TRACE_STOP = 15  #: recording stopped
    IDLE = 16  #: the CPU went idle (no task running)
    TASK_CREATE = 17  #: task ``target_id`` created
    TASK_TERMINATE = 18  #: task ``target_id`` terminated
    TIMER_ENTER = 19  #: software-timer callback entered
    TIMER_EXIT = 20  #: software-timer callback left
    API_CALL = 21  #: OS/middleware service called; ``src_id`` names it
    API_RETURN = 22  #: OS/middleware service returned; ``value`` = return value
    LOG = 23  #: printf-style message; ``value`` indexes ``Trace.strings``
    SYSTIME = 24  #: target wall-clock sample; ``value`` = time in the source's unit
    USER = 25  #: user/application event not covered above (TraceX user events, SV user ids)
    OTHER = 26  #: any other recorded event, kept by its native number ``src_id``


class CtxType(enum.IntEnum):
    """Which kind of context was running when the event was recorded."""

    NONE = 0
    TASK = 1
    ISR = 2
    IDLE = 3
    INIT = 4  #: before the scheduler ran (TraceX 0xF0F0F0F0)


class Severity(enum.IntEnum):
    """Diagnostic severity (Perfetto stats levels)."""

    INFO = 0
    NOTICE = 1
    DATA_LOSS = 2
    ERROR = 3



@dataclass(frozen=True)
class Task:
    """A task/thread: ``ctx_id`` is the dense index used in the events table."""

    ctx_id: int
    name: str
    priority: int = -1
    native_handle: int = 0
    core: int = -1  #: core the task was seen on, -1 if unknown or several


@dataclass(frozen=True)
class Isr:
    """An interrupt: ``number`` is the value used as ``ctx_id`` for ISR contexts."""

    number: int
    name: str


@dataclass(frozen=True)
class Marker:
    """An instrumentation site (CT_MARK id) with its name."""

    id: int
    name: str


@dataclass(frozen=True)
class Channel:
    """A logic-analyzer channel: ``index`` is the value used as ``marker`` for EDGE events."""

    index: int
    name: str
    initial_level: int = 0
    enabled: bool = True


@dataclass(frozen=True)
class Diagnostic:
    """Recoverable damage or a notable fact about the input (never an exception)."""

    code: str
    severity: Severity
    offset: int
    count: int
    message: str


@dataclass(frozen=True)
class TraceMeta:
    """Facts about the recording as a whole."""

    source_format: str  #: "systemview", "tracex", "sigrok", "vcd", "saleae_csv", ...
    source_version: str = ""  #: format/container version as recorded, "" if unknown
    source_path: str = ""
    source_sha256: str = ""
    tick_hz: int | None = None  #: ts_raw ticks per second; None = unknown (then ts is in ticks)
    clock_domain: str = ""  #: "target_cycles", "target_systick", "la_samples", "target_timer"
    rtos: str = ""
    board: str = ""
    app: str = ""
    firmware_rev: str = ""
    cores: int = 1
    origin_raw: int = 0  #: ts_raw of the capture origin: ts = ticks_to_ns(ts_raw - origin_raw)
    source_kind: str = "trace"  #: "trace" (RTOS trace recorder) or "logic" (logic analyzer), by the reader
    schema_version: int = SCHEMA_VERSION
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.source_kind not in SOURCE_KINDS:
            raise ValueError(f"Invalid value for the 'source_kind' parameter. Allowed values are "
                             f"{' and '.join(repr(k) for k in SOURCE_KINDS)}, but got "
                             f"{self.source_kind!r} instead.")

    @property
    def ts_unit(self) -> str:
        """``"ns"`` when ``tick_hz`` is known, else ``"ticks"``."""
        return "ns" if self.tick_hz else "ticks"

    def replace(self, **changes: Any) -> TraceMeta:
        return dataclasses.replace(self, **changes)
