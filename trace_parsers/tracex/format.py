"""ThreadX trace-buffer wire layout (``tx_trace.h``) with the vendor's names.

A ``.trx`` file is a raw dump of the buffer given to ``tx_trace_enable()``: a 48-byte control header
(``TX_TRACE_HEADER``), the object registry (``TX_TRACE_OBJECT_ENTRY``, ``16 + name_size`` bytes each)
and the circular event buffer (``TX_TRACE_BUFFER_ENTRY``, 32 bytes = 8 ULONG each).  Every ULONG is
in the target's byte order, given by the magic ``TX_TRACE_VALID``: ``BTXT`` little-, ``TXTB``
big-endian.  Event-id names come from the headers (:mod:`._ids`, generated data).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ._ids import EVENT_IDS, OBJECT_TYPES

if TYPE_CHECKING:  # pragma: no cover - the dtypes import NumPy on use (the NumPy-free summary needs none)
    import numpy as np

TX_TRACE_VALID = 0x54585442
MAGIC_LE = b"BTXT"  #: TX_TRACE_VALID stored little-endian
MAGIC_BE = b"TXTB"  #: TX_TRACE_VALID stored big-endian
HEADER_SIZE = 48
EVENT_SIZE = 32
RESERVED = (0xAAAAAAAA, 0xBBBBBBBB, 0xCCCCCCCC)  #: reserved2..4 written by tx_trace_enable
MAX_NAME_SIZE = 64  #: TraceX rejects object_name_size >= 64

# thread_pointer encodings
CTX_ISR = 0xFFFFFFFF
CTX_INIT = 0xF0F0F0F0
CTX_NONE = 0  #: slot never written (also "idle" as a TraceX next context)

# scheduling event ids (tx_trace.h)
TX_TRACE_THREAD_RESUME = 1
TX_TRACE_THREAD_SUSPEND = 2
TX_TRACE_ISR_ENTER = 3
TX_TRACE_ISR_EXIT = 4
TX_TRACE_TIME_SLICE = 5
TX_TRACE_RUNNING = 6
TX_TRACE_MUTEX_GET = 52
TX_TRACE_MUTEX_PUT = 57
TX_TRACE_THREAD_CREATE = 100
TX_TRACE_THREAD_RELINQUISH = 109
TX_TRACE_USER_EVENT_START = 4096  #: tx_api.h
TX_TRACE_USER_EVENT_END = 65535

TX_TRACE_OBJECT_TYPE_THREAD = 1

#: ``thread_priority`` word in thread context: bit 31 flags the preemption threshold in bits 16..25
PRIORITY_PT_FLAG = 0x80000000

#: crosstrace instrumentation sites (firmware/include/ct_sites.h, append-only): id -> dotted name,
#: used when the header is not beside the package (installed wheel).
_BUILTIN_SITES: dict[int, str] = {
    1: "ctx.yield", 2: "ctx.switch_in", 3: "periodic.fast", 4: "periodic.slow", 5: "isr.enter",
    6: "isr.task_wake", 7: "fft.start", 8: "fft.stop", 9: "fft.sample", 10: "fft.uart_send",
    11: "calib.loop",
}


def _load_sites() -> dict[int, str]:
    header = Path(__file__).resolve().parents[2] / "firmware" / "include" / "ct_sites.h"
    try:
        sites = parse_ct_sites(header)
    except (OSError, UnicodeDecodeError):
        sites = {}
    return sites or dict(_BUILTIN_SITES)


#: ``TX_TRACE_HEADER`` field names in wire order (all ULONG except the two USHORTs)
HEADER_FIELDS = (
    ("id", "u4"), ("timer_valid_mask", "u4"), ("trace_base_address", "u4"),
    ("registry_start_pointer", "u4"), ("reserved1", "u2"), ("object_name_size", "u2"),
    ("registry_end_pointer", "u4"), ("buffer_start_pointer", "u4"), ("buffer_end_pointer", "u4"),
    ("buffer_current_pointer", "u4"), ("reserved2", "u4"), ("reserved3", "u4"), ("reserved4", "u4"),
)

#: ``TX_TRACE_BUFFER_ENTRY`` field names (``tx_trace_buffer_entry_<name>``) in wire order
EVENT_FIELDS = ("thread_pointer", "thread_priority", "event_id", "time_stamp",
                "information_field_1", "information_field_2", "information_field_3",
                "information_field_4")


def header_dtype(byteorder: str) -> np.dtype:
    """The 48-byte control header for ``byteorder`` ``'<'`` or ``'>'``."""
    import numpy as np

    return np.dtype([(n, byteorder + t) for n, t in HEADER_FIELDS])


def registry_dtype(byteorder: str, name_size: int) -> np.dtype:
    """One ``TX_TRACE_OBJECT_ENTRY`` (16 + ``name_size`` bytes)."""
    import numpy as np

    return np.dtype([("available", "u1"), ("type", "u1"), ("reserved1", "u1"), ("reserved2", "u1"),
                     ("thread_pointer", byteorder + "u4"), ("param_1", byteorder + "u4"),
                     ("param_2", byteorder + "u4"), ("name", f"S{name_size}" if name_size else "V0")])


def event_dtype(byteorder: str) -> np.dtype:
    """One 32-byte ``TX_TRACE_BUFFER_ENTRY``."""
    import numpy as np

    return np.dtype([(n, byteorder + "u4") for n in EVENT_FIELDS])


def event_name(event_id: int) -> str:
    """Header name of an event id (``TX_TRACE_QUEUE_SEND``); user events are ``USER_EVENT_<n>``.

    >>> event_name(69), event_name(4096 + 3), event_name(77)
    ('TX_TRACE_QUEUE_SEND', 'USER_EVENT_3', 'UNKNOWN_77')
    """
    if event_id >= TX_TRACE_USER_EVENT_START:
        return f"USER_EVENT_{event_id - TX_TRACE_USER_EVENT_START}"
    entry = EVENT_IDS.get(event_id)
    return entry[0] if entry else f"UNKNOWN_{event_id}"


def info_labels(event_id: int) -> tuple[str, str, str, str]:
    """Meaning of ``information_field_1..4`` for an event id (from the header comments).

    >>> info_labels(1)
    ('thread ptr', 'previous_state', 'stack ptr', 'next thread')
    """
    if event_id >= TX_TRACE_USER_EVENT_START:
        return ("user 1", "user 2", "user 3", "user 4")
    entry = EVENT_IDS.get(event_id)
    return entry[1] if entry else ("", "", "", "")


def object_type_name(type_: int) -> str:
    """Short registry type name: ``THREAD``, ``QUEUE``, ``MEDIA``, ``TCP_SOCKET``, ...

    >>> object_type_name(1), object_type_name(13), object_type_name(99)
    ('THREAD', 'TCP_SOCKET', 'TYPE_99')
    """
    full = OBJECT_TYPES.get(type_)
    if full is None:
        return f"TYPE_{type_}"
    return full.split("_OBJECT_TYPE_", 1)[1]


def known_event_ids() -> np.ndarray:
    """Sorted array of every named (non-user) event id."""
    import numpy as np

    return np.array(sorted(EVENT_IDS), dtype=np.uint32)


def parse_ct_sites(path: str | Path) -> dict[int, str]:
    """Read ``id -> dotted name`` from a ``ct_sites.h`` ``CT_SITE_TABLE`` (to check :data:`CT_SITES`)."""
    import re

    text = Path(path).read_text()
    return {int(m.group(1)): m.group(2)
            for m in re.finditer(r"X\(\s*(\d+)\s*,\s*\w+\s*,\s*\"([^\"]+)\"", text)}


#: A TraceX user event ``4096 + id`` is the trace half of site ``id`` (a MARK whose info word 1 is
#: the new pin level).
CT_SITES: dict[int, str] = _load_sites()
