"""The common event model: one schema for every source format.

Every reader (SystemView, TraceX, sigrok, VCD, Saleae, DSView) produces a :class:`Trace`.  Its
``events`` are a NumPy structured array whose columns are declared once, in :data:`EVENT_COLUMNS`;
the Arrow schema, the NumPy dtype and ``docs/schema.md`` (``make docs``) are all generated from it.

Time is integer nanoseconds (``ts``) derived from the raw source ticks (``ts_raw``) with integer
arithmetic (:func:`ticks_to_ns`); there are no float seconds anywhere in the model.

Worked example::

    >>> import numpy as np
    >>> ev = empty_events(2)
    >>> ev["ts_raw"] = [0, 180_000_000]
    >>> ticks_to_ns(ev["ts_raw"], 180_000_000).tolist()
    [0, 1000000000]
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ._meta import (  # noqa: F401 (re-exported: the NumPy-free half of the model)
    SCHEMA_VERSION,
    SOURCE_KINDS,
    Channel,
    CtxType,
    Diagnostic,
    EventKind,
    Isr,
    Marker,
    Severity,
    Task,
    TraceMeta,
)

if TYPE_CHECKING:  # pragma: no cover - typing only; keep imports light on the `info` path
    import pandas
    import polars
    import pyarrow

    from .columns import Columns


#: ``value`` is nullable: NumPy stores this sentinel, Arrow/pandas/polars show it as null.
VALUE_NULL = np.iinfo(np.int64).min


@dataclass(frozen=True)
class Column:
    """One column of the events table: name, dtypes, unit and meaning."""

    name: str
    numpy: str
    arrow: str
    unit: str
    doc: str
    nullable: bool = False


#: The events table, in column order. The single source of truth for the schema.
EVENT_COLUMNS: tuple[Column, ...] = (
    Column("ts", "<i8", "int64", "ns",
           "Time since the capture origin in the capture's reference clock, integer ns from `ts_raw` "
           "(`ticks_to_ns`); sorted (stable). In ticks when `TraceMeta.tick_hz` is unknown "
           "(`TraceMeta.ts_unit == 'ticks'`)."),
    Column("ts_raw", "<u8", "uint64", "source ticks",
           "Timestamp exactly as recorded, wrap-unrolled (SystemView delta accumulation, TraceX "
           "32-bit wrap, logic-analyzer sample index)."),
    Column("kind", "u1", "uint8", "EventKind", "What happened (`EventKind`)."),
    Column("core", "u1", "uint8", "-", "CPU index (0 on single-core targets)."),
    Column("ctx_type", "u1", "uint8", "CtxType",
           "Kind of running context (`CtxType`): TASK, ISR, IDLE, INIT, NONE."),
    Column("ctx_id", "<i4", "int32", "id",
           "Running context: dense task index into `tasks`, IRQ number for ISR, -1 if none."),
    Column("target_id", "<i4", "int32", "id",
           "Task affected by READY/BLOCK/CREATE when it differs from the running context; -1 otherwise."),
    Column("marker", "<u4", "uint32", "id",
           "Instrumentation site id for MARK*, logic channel index for EDGE*; 0 otherwise."),
    Column("value", "<i8", "int64", "-",
           "Payload: marker value, edge level, API return value, TraceX info word 1, OVERFLOW drop "
           "counter; null when absent.", nullable=True),
    Column("src_id", "<u4", "uint32", "native id",
           "The source format's own event number (SystemView packet id, TraceX event id); 0 for "
           "logic captures."),
    Column("src_offset", "<u8", "uint64", "bytes / samples",
           "Provenance: byte offset of the record in the source file, or sample index for logic "
           "captures."),
)

EVENT_DTYPE = np.dtype([(c.name, c.numpy) for c in EVENT_COLUMNS])

#: Each column's value where a reader has nothing to say: ids -1, value null, 0 elsewhere.
EVENT_DEFAULTS: dict[str, int] = {c.name: 0 for c in EVENT_COLUMNS} | {
    "ctx_id": -1, "target_id": -1, "value": int(VALUE_NULL)}


def empty_events(n: int = 0) -> np.ndarray:
    """Return ``n`` events with neutral defaults (:data:`EVENT_DEFAULTS`)."""
    ev = np.zeros(n, dtype=EVENT_DTYPE)
    for name, d in EVENT_DEFAULTS.items():
        if d:
            ev[name] = d
    return ev


def ticks_to_ns(ts_raw: Any, tick_hz: int) -> np.ndarray:
    """Convert raw ticks to int64 ns with integer arithmetic (house style §4.4).

    ``q, r = divmod(ticks, hz); ns = q * 1e9 + r * 1e9 // hz`` — exact to < 1 ns, no overflow for
    any realistic capture, no float anywhere.

    >>> ticks_to_ns(np.array([1, 3, 1_000_000_001], dtype=np.uint64), 1_000_000_000).tolist()
    [1, 3, 1000000001]
    >>> ticks_to_ns(np.array([7], dtype=np.uint64), 3).tolist()   # 7 ticks at 3 Hz = 2.333 s
    [2333333333]
    """
    hz = int(tick_hz)
    if hz <= 0:
        raise ValueError(f"tick_hz must be a positive integer, got {tick_hz!r}")
    t = np.asarray(ts_raw, dtype=np.uint64)
    q, r = np.divmod(t, np.uint64(hz))
    if hz <= 18_446_744_073:  # r * 1e9 stays below 2**64
        frac = (r * np.uint64(1_000_000_000)) // np.uint64(hz)
    else:  # pragma: no cover - no real clock runs this fast
        frac = np.array([int(x) * 1_000_000_000 // hz for x in r.tolist()], dtype=np.uint64)
    return (q.astype(np.int64) * np.int64(1_000_000_000)) + frac.astype(np.int64)


# ----------------------------------------------------------------------------------------------
# Side tables (the classes are in _meta)
# ----------------------------------------------------------------------------------------------

SIDE_TABLES: dict[str, tuple[type, str]] = {
    "tasks": (Task, "Tasks/threads; `ctx_id` is referenced by the events' `ctx_id`/`target_id`."),
    "isrs": (Isr, "Interrupts; `number` is referenced by `ctx_id` when `ctx_type` is ISR."),
    "markers": (Marker, "Instrumentation sites; `id` is referenced by `marker` of MARK* events."),
    "channels": (Channel, "Logic channels; `index` is referenced by `marker` of EDGE* events."),
    "diagnostics": (Diagnostic, "Recoverable damage and notices, with byte offsets."),
}



META_FIELDS_DOC: dict[str, str] = {
    "source_format": "Reader that produced the trace (`systemview`, `tracex`, `sigrok`, ...).",
    "source_version": "Format or container version as found in the file; empty if unknown.",
    "source_path": "Path the trace was read from.",
    "source_sha256": "SHA-256 of the source file(s).",
    "tick_hz": "`ts_raw` ticks per second; null when unknown, and then `ts` is in ticks.",
    "clock_domain": "`target_cycles`, `target_systick`, `target_timer` or `la_samples`.",
    "rtos": "RTOS as recorded (SYSDESC, run.json) or empty.",
    "board": "Board as recorded (run.json) or empty.",
    "app": "Firmware application/test as recorded (run.json) or empty.",
    "firmware_rev": "Firmware git revision as recorded (run.json) or empty.",
    "cores": "Number of CPU cores in the trace.",
    "origin_raw": "`ts_raw` value of the capture origin: `ts = ticks_to_ns(ts_raw - origin_raw, tick_hz)`.",
    "source_kind": "`trace` (an RTOS trace recorder: SystemView, TraceX, CTF) or `logic` (a logic-analyzer "
                   "capture: sigrok, VCD, Saleae, DSLogic), declared by the reader; analyzers branch on "
                   "this field only, never on the channels or the clock domain.",
    "schema_version": f"Version of this schema (currently {SCHEMA_VERSION}).",
    "extra": "Format-specific facts (SystemView INIT/SYSDESC, TraceX header and registry, ...).",
}


class Trace:
    """A decoded recording: events plus side tables and metadata.

    The events are held as columns (:attr:`columns`, a :class:`~trace_parsers.columns.Columns`:
    one array per column, each in the cheapest storage) or as rows (:attr:`events`, a NumPy
    structured array with dtype :data:`EVENT_DTYPE`), whichever the reader made; each view is
    made from the other on first use. Sorted by ``ts`` (stable; ties keep source order).
    Asking a columnar trace for :attr:`events` builds the row table (51 B/event) once and then
    keeps only it, with :attr:`columns` viewing its fields. ``strings`` holds LOG message texts
    referenced by ``value``.
    """

    __slots__ = ("_rows", "_cols", "meta", "tasks", "isrs", "markers", "channels", "diagnostics",
                 "strings")

    def __init__(
        self,
        events: np.ndarray | Columns,
        meta: TraceMeta,
        *,
        tasks: Sequence[Task] = (),
        isrs: Sequence[Isr] = (),
        markers: Sequence[Marker] = (),
        channels: Sequence[Channel] = (),
        diagnostics: Sequence[Diagnostic] = (),
        strings: Sequence[str] = (),
    ) -> None:
        self.events = events
        self.meta = meta
        self.tasks = list(tasks)
        self.isrs = list(isrs)
        self.markers = list(markers)
        self.channels = list(channels)
        self.diagnostics = list(diagnostics)
        self.strings = list(strings)

    # -- the events, as rows or columns ---------------------------------------------------------
    @property
    def events(self) -> np.ndarray:
        """The events as an ``EVENT_DTYPE`` structured array (built from the columns once)."""
        if self._rows is None:
            self._rows = self._cols.to_records()
            self._cols = None  # from now on the columns view the rows' fields
        return self._rows

    @events.setter
    def events(self, events: np.ndarray | Columns) -> None:
        from .columns import Columns

        if isinstance(events, Columns):
            self._rows, self._cols = None, events
        elif isinstance(events, np.ndarray) and events.dtype == EVENT_DTYPE:
            self._rows, self._cols = events, None
        else:
            got = events.dtype if isinstance(events, np.ndarray) else type(events).__name__
            raise TypeError(f"events must have dtype EVENT_DTYPE or be Columns, got {got}")

    @property
    def columns(self) -> Columns:
        """The events as :class:`~trace_parsers.columns.Columns` (views of the rows' fields
        when the trace holds rows): ``trace.columns["ts"]``, ``trace.columns[mask]``."""
        if self._cols is None:
            from .columns import Columns

            self._cols = Columns.from_records(self._rows)
        return self._cols

    def held(self) -> np.ndarray | Columns:
        """What the trace holds (rows or columns), for slicing without building the other."""
        return self._rows if self._rows is not None else self._cols

    @property
    def columnar(self) -> bool:
        """True while the events are held as columns only (no row table built)."""
        return self._rows is None

    # -- conveniences -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._rows) if self._rows is not None else len(self._cols)

    def __repr__(self) -> str:
        return (f"<Trace {self.meta.source_format} {len(self)} events, {len(self.tasks)} tasks, "
                f"{len(self.channels)} channels, {len(self.diagnostics)} diagnostics>")

    @property
    def duration(self) -> int:
        """Last minus first ``ts`` (ns, or ticks if ``tick_hz`` is unknown); 0 if empty."""
        if len(self) == 0:
            return 0
        ts = self.columns["ts"]
        return int(ts[-1]) - int(ts[0])

    def task_name(self, ctx_id: int) -> str:
        for t in self.tasks:
            if t.ctx_id == ctx_id:
                return t.name
        return f"task#{ctx_id}"

    def counts_by_kind(self) -> dict[str, int]:
        """``{EventKind name: count}`` for the kinds present."""
        kinds, counts = np.unique(self.columns["kind"], return_counts=True)
        return {EventKind(int(k)).name: int(c) for k, c in zip(kinds, counts)}

    def diagnostics_at_least(self, severity: Severity) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity >= severity]

    # -- exports ------------------------------------------------------------------------------
    def to_arrow(self) -> pyarrow.Table:
        """Events as an Arrow table with ``unit`` field metadata and ``schema_version``."""
        import pyarrow as pa

        arrays = []
        n, cols = len(self), self.columns
        for c in EVENT_COLUMNS:
            typ = getattr(pa, c.arrow)()
            col = np.ascontiguousarray(cols[c.name], dtype=np.dtype(typ.to_pandas_dtype()))
            validity = None
            if c.nullable:
                null = col == VALUE_NULL
                if null.any():
                    validity = pa.py_buffer(np.packbits(~null, bitorder="little"))
            # from buffers, not pa.array(ndarray): that would import pandas (~0.15 s) to test the type
            arrays.append(pa.Array.from_buffers(typ, n, [validity, pa.py_buffer(col)]))
        return pa.Table.from_arrays(arrays, schema=arrow_schema())

    def to_pandas(self) -> pandas.DataFrame:
        """Events as a pandas DataFrame (``value`` as nullable Int64)."""
        return self.to_arrow().to_pandas(types_mapper=_pandas_nullable_mapper())

    def to_polars(self) -> polars.DataFrame:
        """Events as a polars DataFrame (polars comes with the ``frames`` extra)."""
        try:
            import polars as pl
        except ImportError:
            raise ModuleNotFoundError("Trace.to_polars() needs polars, which is not installed: "
                                      "pip install 'crosstrace[frames]' (or pip install polars)",
                                      name="polars") from None

        return pl.from_arrow(self.to_arrow())  # type: ignore[return-value]

    def side_table(self, name: str) -> pyarrow.Table:
        """One side table (``tasks``, ``isrs``, ``markers``, ``channels``, ``diagnostics``) as Arrow."""
        import pyarrow as pa

        if name not in SIDE_TABLES:
            raise ValueError(f"Invalid value for the 'name' parameter. Allowed values are "
                             f"{', '.join(repr(k) for k in SIDE_TABLES)}, but got {name!r} instead.")
        cls = SIDE_TABLES[name][0]
        rows = getattr(self, name)
        names = [f.name for f in dataclasses.fields(cls)]
        cols = {n: [int(getattr(r, n)) if isinstance(getattr(r, n), enum.IntEnum) else getattr(r, n)
                    for r in rows] for n in names}
        return pa.table(cols) if rows else pa.table({n: pa.array([], type=pa.null()) for n in names})

    def select(self, mask: np.ndarray) -> Trace:
        """A trace with the same side tables and only the events where ``mask`` is true."""
        return Trace(self.held()[mask], self.meta, tasks=self.tasks, isrs=self.isrs,
                     markers=self.markers, channels=self.channels, diagnostics=self.diagnostics,
                     strings=self.strings)


def _pandas_nullable_mapper() -> Any:
    import pandas as pd
    import pyarrow as pa

    return {pa.int64(): pd.Int64Dtype()}.get


def arrow_schema() -> pyarrow.Schema:
    """The events table's Arrow schema, generated from :data:`EVENT_COLUMNS`."""
    import pyarrow as pa

    fields = [pa.field(c.name, getattr(pa, c.arrow)(), nullable=c.nullable,
                       metadata={"unit": c.unit, "doc": c.doc}) for c in EVENT_COLUMNS]
    return pa.schema(fields, metadata={"schema_version": str(SCHEMA_VERSION)})


def sort_events(events: np.ndarray) -> np.ndarray:
    """Stable sort by ``ts`` (ties keep source order)."""
    if events.shape[0] < 2 or bool(np.all(events["ts"][1:] >= events["ts"][:-1])):
        return events
    return events[np.argsort(events["ts"], kind="stable")]


def concat_events(parts: Iterable[np.ndarray]) -> np.ndarray:
    """Concatenate event arrays and sort them stably by ``ts``."""
    parts = [p for p in parts if p.shape[0]]
    if not parts:
        return empty_events(0)
    return sort_events(np.concatenate(parts))


def validate(trace: Trace) -> list[str]:
    """Check the model's invariants; return a list of problems (empty when valid)."""
    problems: list[str] = []
    ev = trace.columns
    if ev.dtype != EVENT_DTYPE:
        problems.append("events dtype differs from EVENT_DTYPE")
        return problems
    if ev.shape[0] > 1 and not bool(np.all(ev["ts"][1:] >= ev["ts"][:-1])):
        problems.append("ts is not sorted")
    kinds = set(int(k) for k in np.unique(ev["kind"]))
    bad = kinds - {int(k) for k in EventKind}
    if bad or 0 in kinds:
        problems.append(f"invalid kind values: {sorted(bad | ({0} & kinds))}")
    cts = set(int(k) for k in np.unique(ev["ctx_type"])) - {int(k) for k in CtxType}
    if cts:
        problems.append(f"invalid ctx_type values: {sorted(cts)}")
    ids = {t.ctx_id for t in trace.tasks}
    if len(ids) != len(trace.tasks):
        problems.append("duplicate ctx_id in tasks")
    task_rows = ev["ctx_type"] == CtxType.TASK
    unknown = set(np.unique(ev["ctx_id"][task_rows]).tolist()) - ids
    if unknown and trace.tasks:
        problems.append(f"events reference unknown task ids {sorted(unknown)[:10]}")
    if trace.meta.tick_hz and ev.shape[0]:
        rel = ev["ts_raw"].astype(np.uint64) - np.uint64(trace.meta.origin_raw)
        if np.any(ev["ts_raw"] < np.uint64(trace.meta.origin_raw)) or not np.array_equal(
                ticks_to_ns(rel, trace.meta.tick_hz), ev["ts"]):
            problems.append("ts differs from ticks_to_ns(ts_raw - origin_raw, tick_hz)")
    elif ev.shape[0] and not np.array_equal(
            ev["ts_raw"].astype(np.int64) - np.int64(trace.meta.origin_raw), ev["ts"]):
        problems.append("tick_hz unknown but ts differs from ts_raw - origin_raw")
    return problems


def schema_markdown() -> str:
    """Render ``docs/schema.md`` from the declarations in this module."""
    out = [f"# crosstrace event model (schema version {SCHEMA_VERSION})", "",
           "Generated from `trace_parsers/model.py` by `make docs`; do not edit by hand.", "",
           "## Events table", "",
           "| column | NumPy | Arrow | unit | meaning |", "|---|---|---|---|---|"]
    for c in EVENT_COLUMNS:
        null = " Nullable." if c.nullable else ""
        out.append(f"| `{c.name}` | `{c.numpy}` | `{c.arrow}` | {c.unit} | {c.doc}{null} |")
    for title, en in (("EventKind", EventKind), ("CtxType", CtxType), ("Severity", Severity)):
        out += ["", f"## {title}", "", "| value | name | meaning |", "|---|---|---|"]
        for m in en:
            out.append(f"| {int(m)} | `{m.name}` | {_member_doc(en, m)} |")
    out += ["", "## Side tables", ""]
    for name, (cls, doc) in SIDE_TABLES.items():
        out += [f"### `{name}`", "", doc, "", "| field | type |", "|---|---|"]
        for f in dataclasses.fields(cls):
            t = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
            out.append(f"| `{f.name}` | `{t}` |")
        out.append("")
    out += ["## Storage", "",
            "A `Trace` holds its events as columns (`trace.columns`, `trace_parsers.columns.Columns`: one "
            "array per column) or as rows (`trace.events`, a NumPy structured array of the dtype above), "
            "whichever its reader made, and builds the other view on first use. The columns of a "
            "columnar trace may be held narrower than the dtypes above (the narrowest integer width "
            "that holds every value), as one constant, or sparse (only the rows that differ from the "
            "column's default: null for `value`, -1 for `target_id`); `trace.columns[name]` always "
            "gives the column in the dtype above. The SystemView reader makes columns; the other "
            "readers make rows.", ""]
    out += ["## TraceMeta", "", "| field | meaning |", "|---|---|"]
    for f in dataclasses.fields(TraceMeta):
        out.append(f"| `{f.name}` | {META_FIELDS_DOC.get(f.name, '')} |")
    out += ["", "## Time", "",
            "With `t = ts_raw - origin_raw`: `ts = (t // tick_hz) * 1e9 + (t % tick_hz) * 1e9 // tick_hz`, "
            "in integers (`ticks_to_ns`). With `tick_hz = 1_000_000_000` (QEMU TIM2) `ts == t`. "
            "When `tick_hz` is unknown, `ts = t` in ticks and `TraceMeta.ts_unit` is `ticks`.", ""]
    return "\n".join(out)


def _member_doc(en: type[enum.IntEnum], member: enum.IntEnum) -> str:
    import inspect

    src = inspect.getsource(en)
    for line in src.splitlines():
        s = line.strip()
        if s.startswith(f"{member.name} =") and "#:" in s:
            return s.split("#:", 1)[1].strip()
    return ""


def fill_ts(events: np.ndarray, tick_hz: int | None, origin_raw: int = 0) -> np.ndarray:
    """Set ``events["ts"]`` from ``ts_raw`` (in place; also returned), per the units rule.

    ``ts = ticks_to_ns(ts_raw - origin_raw, tick_hz)``; with ``tick_hz=None`` ``ts`` stays in ticks.
    """
    rel = events["ts_raw"].astype(np.uint64) - np.uint64(origin_raw)
    events["ts"] = ticks_to_ns(rel, tick_hz) if tick_hz else rel.astype(np.int64)
    return events
