"""Cross-validation must fail on the faults it exists to catch: injected into committed captures, on
either side, with the verdict each fault must get worked out from the arithmetic of the rule
(``FAIL`` when ``|Δ| > 2 % · logic + one quantum``; ``INCOMPLETE`` when more than
``max(1, 0.5 %)`` of the instances are unpaired on either side)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from analyzers.campaign.capture import _open
from analyzers.crossval import cross_validate
from analyzers.sites import load_sites
from trace_parsers.model import EventKind, Trace, fill_ts

ROOT = Path(__file__).resolve().parents[2] / "captures" / "qemu_netduinoplus2"
ISR = {rtos: ROOT / rtos / "isr_latency" / "ref" for rtos in ("freertos", "threadx")}
METRIC = "isr.to_task.latency"


def _load(folder: Path) -> tuple[dict, Trace, dict[str, Trace]]:
    run = json.loads((folder / "run.json").read_text())
    trace = _open(folder / run["trace"]["file"], tick_hz=run["trace"].get("tick_hz"))
    logic = {e["profile"]["name"]: _open(folder / e["file"]) for e in run["logic"]}
    return run, trace, logic


@pytest.fixture(scope="module")
def isr_captures() -> dict[str, tuple[dict, Trace, dict[str, Trace]]]:
    return {rtos: _load(folder) for rtos, folder in ISR.items()}


def _copy(tr: Trace, events: np.ndarray | None = None, channels=None) -> Trace:
    ev = (tr.events if events is None else events).copy()
    order = np.argsort(ev["ts"], kind="stable")  # the readers' invariant: time order
    return Trace(
        ev[order],
        tr.meta,
        tasks=tr.tasks,
        isrs=tr.isrs,
        markers=tr.markers,
        channels=tr.channels if channels is None else channels,
        strings=tr.strings,
    )


def _edge_rows(cap: Trace, channel: int) -> np.ndarray:
    ev = cap.events
    return np.flatnonzero(
        ((ev["kind"] == EventKind.EDGE_RISE) | (ev["kind"] == EventKind.EDGE_FALL))
        & (ev["marker"] == channel)
    )


def _shift_site(tr: Trace, site_id: int, channel: int | None, delta_ns: float) -> Trace:
    """Every occurrence of one site later by ``delta_ns``: its trace MARKs, or its pin edges."""
    ev = tr.events.copy()
    if channel is None:
        rows = (ev["kind"] == EventKind.MARK) & (ev["marker"] == site_id)
        rows |= (ev["kind"] == EventKind.USER) & (ev["src_id"] == 4096 + site_id)
    else:
        rows = np.zeros(ev.size, bool)
        rows[_edge_rows(tr, channel)] = True
    assert rows.any()
    ev["ts"][rows] += int(round(delta_ns))
    return _copy(tr, ev)


def _channel(cap: Trace, name: str) -> int:
    return next(c.index for c in cap.channels if c.name == name)


def _verdict(run: dict, trace: Trace, cap: Trace, **kw):
    cv = cross_validate(trace, cap, sites=load_sites(run), **kw)
    return cv, {a.metric: a for a in cv.agreements}


def _expected(logic_mean: float, quantum: float, delta: float) -> str:
    return "FAIL" if abs(delta) > 0.02 * abs(logic_mean) + quantum else "PASS"


@pytest.mark.parametrize("rtos", ["freertos", "threadx"])
@pytest.mark.parametrize("profile", ["ideal", "la100"])
@pytest.mark.parametrize("side", ["trace", "pins"])
@pytest.mark.parametrize("site", ["isr.enter", "isr.task_wake"])
@pytest.mark.parametrize("pct", [1.0, 3.0, 5.0])
def test_constant_bias_at_one_site(isr_captures, rtos, profile, side, site, pct):
    run, trace, logic = isr_captures[rtos]
    cap = logic[profile]
    _, base = _verdict(run, trace, cap)
    b = base[METRIC]
    assert b.verdict in ("PASS", "UNRESOLVED") and b.calibration_source == "none"
    delta = pct / 100.0 * b.logic_mean
    sid = next(s.id for s in load_sites(run) if s.name == site)
    if side == "trace":
        trace = _shift_site(trace, sid, None, delta)
    else:
        cap = _shift_site(cap, sid, _channel(cap, site), delta)
    cv, ag = _verdict(run, trace, cap)
    a = ag[METRIC]
    # a later end (or an earlier start) on the trace side lengthens the trace's interval
    sign = (1 if site == "isr.task_wake" else -1) * (1 if side == "trace" else -1)
    moved = a.raw_diff_ns - b.raw_diff_ns
    assert moved == pytest.approx(sign * delta, abs=a.quantum_ns + 1), "the injected bias is reported raw"
    assert a.n_pairs == b.n_pairs and a.unmatched_trace == 0 and a.unmatched_logic == 0
    want = _expected(a.logic_mean, a.quantum_ns, a.raw_diff_ns)
    if want == "PASS" and not a.resolvable:
        want = "UNRESOLVED"
    assert a.verdict == want, (a.raw_rel_diff_pct, a.limit_pct, a.reason)
    if pct >= 3 and rtos == "freertos":  # 3 % is beyond 2 % + one quantum of the FreeRTOS latency
        assert a.verdict == "FAIL" and cv.verdict == "FAIL"


@pytest.mark.parametrize("profile", ["ideal", "la100"])
def test_lost_and_extra_pulses_are_incomplete(isr_captures, profile):
    run, trace, logic = isr_captures["freertos"]
    cap = logic[profile]
    ev, edge = cap.events, _edge_rows(cap, _channel(cap, "isr.task_wake"))
    lost = _copy(cap, np.delete(ev, edge[::4]))  # a quarter of the task_wake pulses never reached the pin
    cv, ag = _verdict(run, trace, lost)
    a = ag[METRIC]
    assert a.verdict == "INCOMPLETE" and a.unmatched_trace >= edge.size // 4 - 1
    assert a.first_unmatched_trace_ns == a.first_unmatched_trace_ns  # a time is given, not NaN
    assert cv.verdict == "INCOMPLETE" and any("isr.task_wake" in p for p in cv.problems)
    # extra pulses: three glitches on the pin that the trace never recorded
    extra = ev[edge[10:13]].copy()
    extra["ts"] += 300
    cv, ag = _verdict(run, trace, _copy(cap, np.concatenate([ev, extra])))
    assert cv.verdict in ("INCOMPLETE", "FAIL") and any("isr.task_wake" in p for p in cv.problems)


def test_one_lost_pulse_is_tolerated(isr_captures):
    run, trace, logic = isr_captures["freertos"]
    cap = logic["ideal"]
    ev, edge = cap.events, _edge_rows(cap, _channel(cap, "isr.task_wake"))
    cv, ag = _verdict(run, trace, _copy(cap, np.delete(ev, edge[-1:])))
    assert ag[METRIC].verdict == "PASS" and ag[METRIC].unmatched_trace == 1


def test_renamed_channel_names_the_missing_site(isr_captures):
    run, trace, logic = isr_captures["freertos"]
    cap = logic["ideal"]
    chans = [replace(c, name="gpio7") if c.name == "isr.task_wake" else c for c in cap.channels]
    cv, ag = _verdict(run, trace, _copy(cap, channels=chans))
    assert cv.verdict == "INCOMPLETE"
    assert any("isr.task_wake" in p and "no channel" in p for p in cv.problems)
    assert METRIC not in ag  # the pins no longer show isr.task_wake: nothing to compare, and said so


def test_wrong_trace_clock_rate_fails(isr_captures):
    run, trace, logic = isr_captures["freertos"]
    ev = trace.events.copy()
    fill_ts(ev, int(run["trace"]["tick_hz"] * 1.05))  # the reader was told a 5 % faster clock
    cv, ag = _verdict(run, _copy(trace, ev), logic["ideal"])
    assert ag[METRIC].verdict == "FAIL" and ag[METRIC].raw_rel_diff_pct == pytest.approx(-100 / 21, abs=0.2)


def test_scatter_fails_per_instance(isr_captures):
    run, trace, logic = isr_captures["freertos"]
    cap = logic["ideal"]
    ev, rows = cap.events.copy(), _edge_rows(cap, _channel(cap, "isr.task_wake"))
    rng = np.random.default_rng(1)
    ev["ts"][rows] += rng.choice([-80, 80], rows.size)  # ±6 %: the mean barely moves, instances do
    cv, ag = _verdict(run, trace, _copy(cap, ev))
    a = ag[METRIC]
    assert abs(a.raw_rel_diff_pct) < 2 and a.within_tol_pct < 99 and a.verdict == "FAIL"


def test_declared_edge_counts_are_checked(isr_captures):
    run, trace, logic = isr_captures["freertos"]
    declared = dict(run["logic"][0]["edges"])
    cv, _ = _verdict(run, trace, logic["ideal"], declared_edges=declared)
    assert cv.verdict == "PASS" and not cv.problems
    declared["isr.enter"] += 2
    cv, _ = _verdict(run, trace, logic["ideal"], declared_edges=declared)
    assert cv.verdict == "INCOMPLETE" and any("isr.enter" in p and "declares" in p for p in cv.problems)


def test_kernel_events_against_the_pins(isr_captures):
    run, trace, logic = isr_captures["freertos"]
    cv, _ = _verdict(run, trace, logic["ideal"])
    rows = {(r["kernel_event"], r["site"]): r for r in cv.kernel_timing}
    isr = rows[("ISR_ENTER", "isr.enter")]
    assert isr["n"] == isr["n_sites"] == 200
    # the ISR wrapper records ISR_ENTER before the handler's first statement raises the pin
    assert isr["mean_ns"] < 0 and isr["max_ns"] < 0 and isr["std_ns"] < 20
    # independent check: the trace's own distance ISR_ENTER -> isr.enter mark, minus the pin's
    ev = trace.events
    k = ev["ts"][ev["kind"] == EventKind.ISR_ENTER]
    m = ev["ts"][(ev["kind"] == EventKind.MARK) & (ev["marker"] == 5)]
    gap = m - k[np.searchsorted(k, m, side="right") - 1]
    assert -isr["mean_ns"] == pytest.approx(gap.mean(), abs=3)
