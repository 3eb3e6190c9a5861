"""OS event descriptions: names and arguments of SystemView ids >= 32.

Two sources, one model (:class:`OsTable`):

* a SystemView description file (``SYSVIEW_<OS>.txt`` grammar: ``<id> <Name> [arg=%fmt ...]
  [| Returns %fmt]``; ``#`` comments, ``NamedType``/``TaskState`` lines are kept as named types,
  ``Option`` lines as options);
* the bundled tables in ``data/`` (crosstrace's own JSON format), one per patch numbering:
  ``freertos_segger`` (SEGGER's FreeRTOS patch, id = 32 + apiID), ``freertos_espidf``
  (ESP-IDF's patch), ``zephyr`` (Zephyr's tracing subsystem, ids 32-166 of Zephyr 4.3), ``ucos3`` and
  ``ucos2`` (SEGGER's µC/OS-III and µC/OS-II glue: ids 33-61, 33-67).
  :func:`choose_table` picks one from SYSDESC (``O=``, ``D=``, ``C=``).

Example::

    >>> t = parse_description("35 vTaskDelay xTicksToDelay=%u\\n36 xQueueReceive q=%I | Returns %b\\n")
    >>> t.label(35), t.events[36].returns
    ('vTaskDelay', '%b')
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import TraceFormatError

DATA_DIR = Path(__file__).with_name("data")
BUNDLED = ("freertos_segger", "freertos_espidf", "zephyr", "ucos3", "ucos2")


@dataclass(frozen=True)
class EventDesc:
    id: int
    name: str
    args: tuple[tuple[str, str], ...] = ()
    returns: str | None = None


@dataclass
class OsTable:
    name: str
    os: str = ""
    events: dict[int, EventDesc] = field(default_factory=dict)
    named_types: dict[str, dict[int, str]] = field(default_factory=dict)
    options: set[str] = field(default_factory=set)  #: ``Option`` lines (e.g. ``ReversePriority``)

    def name_of(self, evt_id: int) -> str | None:
        d = self.events.get(evt_id)
        return d.name if d else None

    def label(self, evt_id: int) -> str:
        return self.name_of(evt_id) or f"id{evt_id}"


def parse_description(text: str, *, source: str = "<description>") -> OsTable:
    """Parse ``SYSVIEW_<OS>.txt`` text. Bad lines raise ``TraceFormatError`` (SV_BAD_DESCRIPTION)."""
    table = OsTable(name=source)
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        head, _, ret = line.partition("|")
        parts = head.split()
        if parts[0] == "Option":
            table.options.update(parts[1:])
            continue
        if parts[0] in ("NamedType", "TaskState"):
            if len(parts) < 2:
                raise TraceFormatError(f"line {lineno}: expected 'NamedType <Name> <n>=<text> ...', "
                                       f"found {raw!r}", code="SV_BAD_DESCRIPTION", path=source)
            tname = parts[1] if parts[0] == "NamedType" else "TaskState"
            vals = table.named_types.setdefault(tname, {})
            for item in parts[2:] if parts[0] == "NamedType" else parts[1:]:
                k, _, v = item.partition("=")
                try:
                    vals[int(k, 0)] = v
                except ValueError:
                    continue
            continue
        try:
            evt_id = int(parts[0], 0)
        except ValueError:
            raise TraceFormatError(f"line {lineno}: expected '<id> <Name> [arg=%fmt ...]', found {raw!r}",
                                   code="SV_BAD_DESCRIPTION", path=source) from None
        if len(parts) < 2:
            raise TraceFormatError(f"line {lineno}: event {evt_id} has no name", code="SV_BAD_DESCRIPTION",
                                   path=source)
        args = []
        for a in parts[2:]:
            k, sep, fmt = a.rstrip(",").partition("=")
            args.append((k, fmt if sep else "%u"))
        rt = ret.strip()
        returns = rt.split(None, 1)[1].strip() if rt.lower().startswith("returns") and len(rt.split()) > 1 \
            else (rt or None)
        table.events[evt_id] = EventDesc(evt_id, parts[1], tuple(args), returns)
    return table


def load_bundled(name: str) -> OsTable:
    """Load one of :data:`BUNDLED`."""
    if name not in BUNDLED:
        vals = ", ".join(repr(b) for b in BUNDLED)
        raise ValueError(f"Invalid value for the 'description' parameter. Allowed values are {vals} "
                         f"or a path to a SYSVIEW_<OS>.txt file, but got {name!r} instead.")
    doc = json.loads((DATA_DIR / f"{name}.json").read_text(encoding="utf-8"))
    t = OsTable(name=name, os=doc.get("os", ""))
    for k, v in doc["events"].items():
        t.events[int(k)] = EventDesc(int(k), v["name"], tuple((a, f) for a, f in v.get("args", [])),
                                     v.get("returns"))
    return t


@functools.cache
def bundled_table(name: str) -> OsTable:
    """:func:`load_bundled`, parsed once per process: the table the readers pick from SYSDESC
    (shared: the readers only read it; a small file's read paid ~0.3 ms to parse it each time)."""
    return load_bundled(name)


def load_description(spec: str | Path | OsTable) -> OsTable:
    """A bundled table name, a path to a description file, or an :class:`OsTable`."""
    if isinstance(spec, OsTable):
        return spec
    if isinstance(spec, str) and spec in BUNDLED:
        return load_bundled(spec)
    p = Path(spec)
    if not p.is_file():
        return load_bundled(str(spec))  # raises the option error
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise TraceFormatError(f"cannot read the description file: {e.strerror}", code="IO_ERROR",
                               path=str(p)) from None
    return parse_description(text, source=str(p))


def choose_table(sysdesc: dict[str, str]) -> str | None:
    """Pick a bundled table from SYSDESC keys, or None when the OS has none (not FreeRTOS, Zephyr or
    µC/OS-III/II)."""
    os_name = sysdesc.get("O", "").strip().lower()
    if os_name == "zephyr":
        return "zephyr"
    if os_name == "ucos-iii":
        return "ucos3"
    if os_name == "ucos-ii":
        return "ucos2"
    if os_name != "freertos":
        return None
    dev = (sysdesc.get("D", "") + " " + sysdesc.get("C", "")).lower()
    if "esp32" in dev or "xtensa" in dev or "risc" in dev and "esp" in dev:
        return "freertos_espidf"
    return "freertos_segger"
