"""Perfetto trace (protobuf) of a :class:`~.timeline.Timeline`, written with Perfetto's own protos.

Tracks: one process per core ("core N") holding a thread per task (slices ``running`` and
``ready``), a track per ISR (its activations), ``markers`` (instants: sites, user events,
data-loss gaps) and ``marked intervals``; a ``metrics`` group with one track per metric (each
instance a slice, its value as an argument); a ``pins`` group with one counter track per logic
channel (0/1), mapped onto the trace clock. Slices that overlap on one track are spread over
numbered lanes so that every track nests properly. Open the file in ui.perfetto.dev.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trace_parsers.errors import AnalysisError

from .timeline import Timeline

SEQ = 1  #: trusted packet sequence id of every packet we write
EXTRA = "perfetto"  #: the pyproject extra that installs Perfetto's protos


def protos() -> Any:
    """Perfetto's generated trace protos (the ``perfetto`` package), or one line naming the extra."""
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
    except ImportError as e:  # the package, or protobuf under it
        raise AnalysisError(
            f"the Perfetto export needs Perfetto's protos: pip install 'crosstrace[{EXTRA}]' "
            f"({e.name} missing)",
            code="MISSING_EXTRA",
        ) from None
    return perfetto_trace_pb2


class _Tracks:
    """Track uuids and their descriptors, created on first use."""

    def __init__(self, pb: Any) -> None:
        self.pb = pb
        self.uuid: dict[Any, int] = {}
        self.descriptors: list[Any] = []

    def _add(self, key: Any, fill: Any) -> int:
        if key not in self.uuid:
            self.uuid[key] = u = len(self.uuid) + 1
            td = self.pb.TrackDescriptor(uuid=u)
            fill(td)
            self.descriptors.append(td)
        return self.uuid[key]

    def core(self, core: int) -> int:
        def fill(td: Any) -> None:
            td.process.pid = core + 1
            td.process.process_name = f"core {core}"

        return self._add(("core", core), fill)

    def group(self, name: str) -> int:
        return self._add(("group", name), lambda td: setattr(td, "name", name))

    def thread(self, core: int, tid: int, name: str) -> int:
        parent = self.core(core)

        def fill(td: Any) -> None:
            td.thread.pid = core + 1
            td.thread.tid = 1000 * (core + 1) + tid
            td.thread.thread_name = name
            td.parent_uuid = parent

        return self._add(("thread", core, name), fill)

    def child(self, parent: int, name: str, counter: bool = False) -> int:
        def fill(td: Any) -> None:
            td.parent_uuid = parent
            td.name = name
            if counter:
                td.counter.SetInParent()

        return self._add(("child", parent, name), fill)


def _lanes(items: list[Any]) -> list[int]:
    """Lane per interval (sorted by start) so that intervals of one lane never overlap."""
    ends: list[int] = []
    out = []
    for it in items:
        lane = next((k for k, e in enumerate(ends) if e <= it.start), len(ends))
        if lane == len(ends):
            ends.append(it.end)
        else:
            ends[lane] = it.end
        out.append(lane)
    return out


def _slice_tracks(tl: Timeline, tr: _Tracks) -> Iterator[tuple[int, int, Any]]:
    """``(ts, order, (type, track, name, args))`` for every slice begin/end, on its track."""
    by_track: dict[tuple[str, int], list[Any]] = {}
    for iv in tl.intervals:
        by_track.setdefault((iv.track, iv.core), []).append(iv)
    metrics = tr.group("metrics") if any(k[0].startswith("metric:") for k in by_track) else 0
    for (track, core), ivs in sorted(by_track.items()):
        ivs.sort(key=lambda i: (i.start, -i.end))
        for iv, lane in zip(ivs, _lanes(ivs)):
            kind, _, label = track.partition(":")
            suffix = f" ({lane + 1})" if lane else ""
            if kind == "task":
                uid = tr.thread(core, tl.tasks.get((core, label), 0) + 100 * lane, label + suffix)
            elif kind == "metric":
                uid = tr.child(metrics, label + suffix)
            elif kind == "isr":
                uid = tr.child(tr.core(core), f"ISR {label}{suffix}")
            else:
                uid = tr.child(tr.core(core), (label or "marked intervals") + suffix)
            yield iv.start, 1, ("B", uid, iv.name, iv.args)
            yield iv.end, 0, ("E", uid, iv.name, None)


def _events(tl: Timeline, tr: _Tracks) -> list[tuple[int, int, Any]]:
    out = list(_slice_tracks(tl, tr))
    for i in tl.instants:
        uid = tr.child(tr.core(i.core), {"marks": "markers", "user": "user events"}.get(i.track, i.track))
        out.append((i.ts, 2, ("I", uid, i.name, None if i.value is None else {"value": i.value})))
    if tl.channels:
        pins = tr.group(f"pins ({tl.clock} clock)")
        t0 = min([0] + [int(c.ts[0]) for c in tl.channels if c.ts.size])
        t0 = max(t0, min((iv.start for iv in tl.intervals), default=0), 0)
        for c in tl.channels:
            label = c.name + (f" [{c.site}]" if c.site and c.site != c.name else "")
            uid = tr.child(pins, label, counter=True)
            out.append((t0, 3, ("C", uid, c.name, c.initial)))
            for ts, lv in zip(c.ts.tolist(), c.level.tolist()):
                if ts >= 0:
                    out.append((ts, 3, ("C", uid, c.name, lv)))
    out.sort(key=lambda e: (e[0], e[1]))
    return out


def _annotate(pb: Any, ev: Any, args: dict[str, Any]) -> None:
    for k, v in args.items():
        a = ev.debug_annotations.add(name=str(k))
        if isinstance(v, bool) or isinstance(v, str):
            a.string_value = str(v)
        elif isinstance(v, int):
            a.int_value = v
        else:
            a.double_value = float(v)


def to_proto(tl: Timeline) -> Any:
    """The ``perfetto.protos.Trace`` message of a timeline."""
    pb = protos()
    tr = _Tracks(pb)
    for core in tl.cores:
        tr.core(core)
    events = _events(tl, tr)
    trace = pb.Trace()
    first = True
    for td in tr.descriptors:
        pkt = trace.packet.add(trusted_packet_sequence_id=SEQ, track_descriptor=td)
        if first:
            pkt.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
            first = False
    T = pb.TrackEvent
    types = {"B": T.TYPE_SLICE_BEGIN, "E": T.TYPE_SLICE_END, "I": T.TYPE_INSTANT, "C": T.TYPE_COUNTER}
    for ts, _, (typ, uid, name, args) in events:
        if ts < 0:
            continue
        pkt = trace.packet.add(timestamp=int(ts), trusted_packet_sequence_id=SEQ)
        te = pkt.track_event
        te.type = types[typ]
        te.track_uuid = uid
        if typ == "C":
            te.counter_value = int(args)
            continue
        if typ != "E":
            te.name = name
        if args:
            _annotate(pb, te, args)
    return trace


def write(tl: Timeline, path: Path) -> int:
    """Write the timeline as a Perfetto protobuf trace; returns the number of packets."""
    msg = to_proto(tl)
    Path(path).write_bytes(msg.SerializeToString())
    return len(msg.packet)
