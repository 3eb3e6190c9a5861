"""The user's own intervals and pins: a capture configuration for third-party firmware.

Firmware that does not use crosstrace's sites declares what to measure in a ``crosstrace.toml``
beside its recordings (or under the key ``"crosstrace"`` of run.json; run.json wins per key), see
docs/your-firmware.md::

    [[interval]]
    name = "sensor_read"            # metric id user.sensor_read
    start = "mark_start:3"          # event selectors (below)
    end = "mark_stop:3"

    [[pin]]
    channel = "D2"                  # logic channel name (or its index, "2")
    selector = "mark_start:3"       # the trace event the pin shows
    edge = "rising"                 # rising | falling | both

    [trace]
    tick_hz = 1000000               # the trace's tick rate when it states none (TraceX)

Event selectors: ``mark:<id>``, ``mark_start:<id>``, ``mark_stop:<id>`` (SystemView marks);
``marker:<name>``, ``marker_start:<name>``, ``marker_stop:<name>`` (a named marker); ``user:<id>``
(a user event id, e.g. a TraceX user event); ``task:<name>:in`` / ``task:<name>:out`` (the task is
switched in / stops running on its core); ``isr:<name or number>:enter`` / ``:exit``.

Each interval runs from an occurrence of ``start`` to the next occurrence of ``end`` (before the
next ``start``), like a site metric, on the trace and on every logic capture whose pins map both
selectors. Its instances carry ``start_site``/``start_idx``/``end_site``/``end_idx`` (the selector
text and its occurrence index in that source), so the trace's and the pins' instance *k* pair up
exactly as for crosstrace's own sites; :func:`user_site_events` gives the occurrences of every
selector of a source in the shape of :class:`~analyzers.sites.SiteEvents` (for clock alignment).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from trace_parsers.errors import AnalysisError
from trace_parsers.model import EventKind, Trace

from .metrics.base import Result, Summary, make_table, site_interval, summary_fields
from .metrics.stats import DropLog, overflow_gaps
from .sites import Site, SiteEvents, is_logic, tick_ns

CONFIG_NAME = "crosstrace.toml"
EDGES = ("rising", "falling", "both")
_SELECTOR = re.compile(
    r"^(?P<kind>mark|mark_start|mark_stop|marker|marker_start|marker_stop|user|task|isr):"
    r"(?P<key>[^:]+?)(?::(?P<sub>in|out|enter|exit))?$"
)
_NEEDS_SUB = {"task": ("in", "out"), "isr": ("enter", "exit")}


def _bad(msg: str) -> AnalysisError:
    return AnalysisError(msg, code="AN_BAD_CONFIG")


@dataclass(frozen=True)
class Interval:
    name: str
    start: str
    end: str

    @property
    def metric(self) -> str:
        return f"user.{self.name}"


@dataclass(frozen=True)
class PinMap:
    channel: str
    selector: str
    edge: str = "both"


@dataclass(frozen=True)
class UserConfig:
    intervals: tuple[Interval, ...] = ()
    pins: tuple[PinMap, ...] = ()
    source: str = ""  #: where it was read from
    tick_hz: int | None = None  #: [trace] tick_hz: the trace's tick rate when it states none (TraceX)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"interval": [asdict(i) for i in self.intervals],
                             "pin": [asdict(p) for p in self.pins], "source": self.source}
        if self.tick_hz:
            d["trace"] = {"tick_hz": self.tick_hz}
        return d

    def selectors(self) -> list[str]:
        return sorted({s for i in self.intervals for s in (i.start, i.end)})


def check_selector(text: str) -> tuple[str, str, str | None]:
    """``(kind, key, sub)`` of a selector; raises AnalysisError (AN_BAD_CONFIG) when malformed.

    >>> check_selector("task:Tmr Svc:in")
    ('task', 'Tmr Svc', 'in')
    >>> check_selector("mark:3")
    ('mark', '3', None)
    """
    m = _SELECTOR.match(str(text).strip())
    if m is None:
        raise _bad(f"event selector {text!r} not understood (mark:<id>, marker:<name>, user:<id>, "
                   "task:<name>:in|out, isr:<name>:enter|exit, ...)")
    kind, key, sub = m["kind"], m["key"].strip(), m["sub"]
    if kind in _NEEDS_SUB and sub not in _NEEDS_SUB[kind]:
        raise _bad(f"event selector {text!r}: {kind} needs :{' or :'.join(_NEEDS_SUB[kind])}")
    if kind not in _NEEDS_SUB and sub is not None:
        raise _bad(f"event selector {text!r}: {kind} takes no :{sub}")
    if kind in ("mark", "mark_start", "mark_stop", "user") and not key.lstrip("-").isdigit():
        raise _bad(f"event selector {text!r}: {kind} needs a number")
    return kind, key, sub


def parse_config(d: dict[str, Any], source: str = "") -> UserConfig:
    """A validated :class:`UserConfig` from the TOML/JSON structure (see the module docstring)."""
    if not isinstance(d, dict):
        raise _bad(f"{source}: the configuration must be a table/object")
    unknown = set(d) - {"interval", "pin", "trace", "source"}
    if unknown:
        raise _bad(f"{source}: unknown keys {sorted(unknown)} (expected 'interval', 'pin', 'trace')")
    tick_hz = (d.get("trace") or {}).get("tick_hz")
    if tick_hz is not None and (not isinstance(tick_hz, int) or isinstance(tick_hz, bool) or tick_hz <= 0):
        raise _bad(f"{source}: [trace] tick_hz must be a positive integer (Hz), not {tick_hz!r}")
    intervals, pins, names = [], [], set()
    for i, it in enumerate(d.get("interval") or []):
        try:
            iv = Interval(str(it["name"]), str(it["start"]), str(it["end"]))
        except (KeyError, TypeError):
            raise _bad(f"{source}: interval {i + 1} needs name, start and end") from None
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", iv.name) or iv.name in names:
            raise _bad(f"{source}: interval name {iv.name!r} is empty, repeated or has other than "
                       "letters, digits, '_', '-', '.'")
        check_selector(iv.start)
        check_selector(iv.end)
        names.add(iv.name)
        intervals.append(iv)
    for i, p in enumerate(d.get("pin") or []):
        try:
            pm = PinMap(str(p["channel"]), str(p["selector"]), str(p.get("edge", "both")))
        except (KeyError, TypeError):
            raise _bad(f"{source}: pin {i + 1} needs channel and selector") from None
        if pm.edge not in EDGES:
            raise _bad(f"{source}: pin {pm.channel!r}: edge {pm.edge!r} is not one of {', '.join(EDGES)}")
        check_selector(pm.selector)
        pins.append(pm)
    return UserConfig(tuple(intervals), tuple(pins), source, tick_hz)


def load_config(path: Path, run: dict[str, Any] | None = None) -> UserConfig | None:
    """The configuration of a capture: ``crosstrace.toml`` in its folder (or, for a capture that
    is one recording, beside it) merged with run.json's ``"crosstrace"`` (which wins per key)."""
    import tomllib

    path = Path(path)
    folder = path.parent if path.is_file() else path
    merged: dict[str, Any] = {}
    where = []
    toml = folder / CONFIG_NAME
    if toml.is_file():
        try:
            merged.update(tomllib.loads(toml.read_text(encoding="utf-8")))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise _bad(f"{toml}: not valid TOML: {e}") from None
        where.append(str(toml))
    own = (run or {}).get("crosstrace")
    if own:
        if not isinstance(own, dict):
            raise _bad(f"{folder / 'run.json'}: 'crosstrace' must be an object")
        merged.update(own)
        where.append(str(folder / "run.json"))
    if not merged:
        return None
    return parse_config(merged, " + ".join(where))


# -- occurrences of a selector -----------------------------------------------------------------------


def _by_name(items: Sequence[Any], attr: str, key: str) -> int | None:
    for it in items:
        if it.name.strip().lower() == key.strip().lower():
            return int(getattr(it, attr))
    return int(key) if key.lstrip("-").isdigit() else None


def trace_occurrences(trace: Trace, selector: str) -> np.ndarray:
    """Times (sorted int64) of every trace event a selector names."""
    kind, key, sub = check_selector(selector)
    ev = trace.columns
    k = ev["kind"]
    mark_kind = {"mark": EventKind.MARK, "mark_start": EventKind.MARK_START, "mark_stop": EventKind.MARK_STOP}
    if kind in mark_kind or kind.startswith("marker"):
        mid = int(key) if kind in mark_kind else _by_name(trace.markers, "id", key)
        ek = mark_kind[kind.replace("marker", "mark")]
        sel = (k == ek) & (ev["marker"] == mid) if mid is not None else np.zeros(len(ev), bool)
    elif kind == "user":
        sel = (k == EventKind.USER) & (ev["src_id"] == int(key))
    elif kind == "task":
        tid = _by_name(trace.tasks, "ctx_id", key)
        sel = _task_rows(ev, tid, sub) if tid is not None else np.zeros(len(ev), bool)
    else:
        irq = _by_name(trace.isrs, "number", key)
        sel = _isr_rows(ev, irq, sub) if irq is not None else np.zeros(len(ev), bool)
    return np.sort(ev["ts"][sel].astype(np.int64))


def _task_rows(ev: np.ndarray, tid: int, sub: str | None) -> np.ndarray:
    k = ev["kind"]
    mine = (k == EventKind.TASK_SWITCH_IN) & (ev["ctx_id"] == tid)
    if sub == "in":
        return mine
    out = np.zeros(len(ev), bool)
    for c in np.unique(ev["core"][mine]).tolist():  # the next switch-in/idle on its core
        nxt = np.flatnonzero((ev["core"] == c) & ((k == EventKind.TASK_SWITCH_IN) | (k == EventKind.IDLE)))
        own = np.isin(nxt, np.flatnonzero(mine & (ev["core"] == c)))
        follows = np.flatnonzero(own[:-1] & ~own[1:]) + 1
        out[nxt[follows]] = True
    return out


def _isr_rows(ev: np.ndarray, irq: int, sub: str | None) -> np.ndarray:
    from .metrics.kstate import isr_entries, isr_rows

    k = ev["kind"]
    enter = (k == EventKind.ISR_ENTER) & (ev["ctx_id"] == irq)
    if sub == "enter":
        return enter
    out = np.zeros(len(ev), bool)
    for c in np.unique(ev["core"][enter]).tolist():
        rows = isr_rows(k, ev["core"], c)
        got = isr_entries(k[rows])  # one per entry of any IRQ on this core
        mine = (ev["ctx_id"][rows[got.idx]] == irq) & (got.end >= 0)
        out[rows[got.end[mine]]] = True
    return out


def logic_occurrences(capture: Trace, selector: str, pins: Sequence[PinMap]) -> np.ndarray:
    """Times of the edges of the channel mapped to ``selector`` (with the mapped edge kind)."""
    ev = capture.columns
    chans = {c.name.strip().lower(): c.index for c in capture.channels}
    out = []
    for p in pins:
        if p.selector != selector:
            continue
        idx = chans.get(p.channel.strip().lower(), int(p.channel) if p.channel.isdigit() else None)
        if idx is None:
            continue
        kinds = {"rising": (EventKind.EDGE_RISE,), "falling": (EventKind.EDGE_FALL,),
                 "both": (EventKind.EDGE_RISE, EventKind.EDGE_FALL)}[p.edge]
        sel = np.isin(ev["kind"], kinds) & (ev["marker"] == idx)
        out.append(ev["ts"][sel].astype(np.int64))
    return np.sort(np.concatenate(out)) if out else np.zeros(0, np.int64)


def user_site_events(source: Trace, cfg: UserConfig) -> SiteEvents:
    """Occurrences of every selector of ``cfg`` in one source, keyed by the selector text."""
    logic = is_logic(source)
    se = SiteEvents("logic" if logic else "trace", gaps=[] if logic else overflow_gaps(source),
                    tick_ns=tick_ns(source))
    for s in cfg.selectors():
        t = logic_occurrences(source, s, cfg.pins) if logic else trace_occurrences(source, s)
        if t.size:
            se.ts[s] = t
            se.level[s] = np.full(t.size, -1, np.int64)
    return se


def virtual_sites(cfg: UserConfig) -> tuple[Site, ...]:
    """The pins that behave exactly like crosstrace sites, as site-table rows: a ``mark:<id>``
    selector whose pin toggles at every occurrence (edge ``both``). The site's name is the
    selector text, so the site machinery (clock alignment, occurrence pairing) treats the user's
    marks and pins like crosstrace's own; other selectors need :func:`user_site_events`."""
    out = []
    for p in cfg.pins:
        kind, key, _ = check_selector(p.selector)
        if kind == "mark" and p.edge == "both":
            out.append(Site(int(key), p.selector, channel=p.channel))
    return tuple(out)


def user_intervals(source: Trace, cfg: UserConfig, store: Any = None) -> Result:
    """Instances of every user interval in one source (site-like: selector text + occurrence;
    ``store``: the source's spill the table goes to, or None: in memory)."""
    drop_log = DropLog()
    se = user_site_events(source, cfg)
    series = []
    for iv in cfg.intervals:
        if iv.start in se.ts and iv.end in se.ts:
            s, _ = site_interval(iv.metric, se, iv.start, iv.end, drop_log)
            series.append(s)
    series = [s for s in series if len(s)]
    src = se.source
    return Result(make_table(series, src, store), Summary(source=src, **summary_fields(series, drop_log)))


def config_from_options(options: dict[str, Any]) -> UserConfig | None:
    d = options.get("_user_config")
    if not d:
        return None
    return parse_config(json.loads(json.dumps(d)), str(d.get("source", "")))


def analyze(trace: Trace, sites: Sequence[Site], options: dict[str, Any], store: Any = None) -> Result:
    cfg = config_from_options(options)
    if cfg is None or not cfg.intervals:
        source = "logic" if is_logic(trace) else "trace"
        return Result(make_table([], source, store), Summary(source=source))
    return user_intervals(trace, cfg, store)
