"""Kernel metrics (analyzers.metrics.kernel) against an independent reference on corpus recordings.

The reference below is a plain event loop written from the definitions in the module docstring
(Tracealyzer's actor instances): it walks the events in order, keeps per core the running task and
an ISR stack, integrates each task's running time, opens a task instance at its ready event and
closes it at its block. It shares no code with the analyzer (no numpy search, no cpu_load owners).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from analyzers.metrics.kernel import kernel_metrics
from tests.conftest import corpus_dir
from trace_parsers import open_trace, read_systemview
from trace_parsers.model import EventKind

K = EventKind
IDLE_NAMES = {"idle", "idle0", "idle1", "tx_idle"}

#: STM32 FreeRTOS (4), ESP32 dual-core pairs (2), ThreadX (2)
RECORDINGS = {
    "stm32_gutya": ("systemview", ["gutya_stm32f746_freertos_raw.SVdat"]),
    "stm32_notify": ("systemview", ["harinair_stm32f411_freertos_notify_raw.SVdat"]),
    "stm32_idlehook": ("systemview", ["harinair_stm32f411_freertos_idlehook_raw.SVdat"]),
    "stm32_hello": ("systemview", ["nghiaphamsg_stm32f446_freertos_hello_raw.SVdat"]),
    "esp32_load_pair": (
        "systemview",
        ["lilu_esp32_freertos_load_s1_procpu.SVDat", "lilu_esp32_freertos_load_s1_appcpu.SVDat"],
    ),
    "esp32_heaplog_pair": (
        "systemview",
        ["espidf_esp32_heaplog_2024_core0.svdat", "espidf_esp32_heaplog_2024_core1.svdat"],
    ),
    "threadx_demo": ("tracex", ["tracex-sample_demo_threadx.trx"]),
    "threadx_netx": ("tracex", ["tracex-sample_demo_netx_tcp.trx"]),
}


def _open(key: str):
    fmt, files = RECORDINGS[key]
    paths = [corpus_dir(fmt) / f for f in files]
    if fmt == "tracex":
        return open_trace(paths[0], switches=True)
    return read_systemview(paths) if len(paths) > 1 else open_trace(paths[0], on_corrupt="warn")


def _gaps(ev):
    out = []
    for i in range(len(ev)):
        if ev["kind"][i] == K.OVERFLOW:
            out.append((int(ev["ts"][i - 1]) if i else int(ev["ts"][0]), int(ev["ts"][i])))
    return out


def _touches(a, b, gaps):
    return any(a <= g1 and b >= g0 for g0, g1 in gaps)


def reference(trace) -> dict:
    """Every kernel metric by a straightforward event loop: metric -> [(value, start, end)]
    (ISR durations and scalars: values only)."""
    ev = trace.events
    names = {t.ctx_id: t.name for t in trace.tasks}
    idle_ids = {c for c, n in names.items() if n.strip().lower() in IDLE_NAMES}
    isr_names = {i.number: i.name for i in trace.isrs}
    running = {}  # core -> task ctx_id | "idle" | None
    stack = defaultdict(list)  # core -> [[irq, entry ts, readied task or None]]
    last_t = {}  # core -> ts of the last charge
    total = defaultdict(int)  # task -> running time so far
    busy = defaultdict(list)  # (core, task) -> [(from, to)] running intervals
    inst = {}  # task -> [start, from_ready, exec at start, switch-in times]
    sw_since_close = defaultdict(list)  # task -> [(ts, running time then)] since its last close
    closed = defaultdict(list)  # task -> [(start, end, from_ready, first switch-in, exec)]
    pending = []  # (irq, entry ts, readied task) waiting for the task's switch-in
    out = defaultdict(list)
    switches, prev_ctx = defaultdict(int), {}

    def advance(t, lost=False):
        for c in list(last_t):
            r = running.get(c)
            if lost:  # the time up to a data loss or a restart is unknown, on every core
                pass
            elif not stack[c] and isinstance(r, int) and r not in idle_ids and t > last_t[c]:
                total[r] += t - last_t[c]
                busy[(c, r)].append((last_t[c], t))
            last_t[c] = t

    for i in range(len(ev)):
        kind, t, c = int(ev["kind"][i]), int(ev["ts"][i]), int(ev["core"][i])
        lost = kind == K.OVERFLOW or (kind == K.TRACE_START and i > 0)
        advance(t, lost)
        last_t.setdefault(c, t)
        if lost:  # every core's state is unknown: no task, no open ISR, no context to switch from
            for cc in set(running) | set(stack) | set(prev_ctx):
                running[cc] = None
                stack[cc] = []
                prev_ctx[cc] = None
        if kind == K.TASK_SWITCH_IN:
            stack[c] = []  # a switch-in closes the ISRs still open on its core (their exits were lost)
        tgt, cid = int(ev["target_id"][i]), int(ev["ctx_id"][i])
        if kind in (K.TASK_SWITCH_IN, K.IDLE):
            who = cid if kind == K.TASK_SWITCH_IN else "idle"
            running[c] = who
            # a switch from a known context to another (the first switch-in only establishes it)
            switches[c] += prev_ctx.get(c) is not None and prev_ctx[c] != who
            prev_ctx[c] = who
        if kind == K.TASK_SWITCH_IN:
            sw_since_close[cid].append((t, total[cid]))
            if cid in inst:
                inst[cid][3].append(t)
            for p in [p for p in pending if p[2] == cid]:
                pending.remove(p)
                task = names.get(cid, f"task#{cid}")
                out[f"isr.{isr_names.get(p[0], f'irq{p[0]}')}.to_task.{task}"].append((t - p[1], p[1], t))
        elif kind == K.TASK_SWITCH_OUT and not stack[c]:
            running[c] = "idle"
        elif kind == K.ISR_ENTER:
            name = isr_names.get(cid, f"irq{cid}")
            out[f"isr.{name}.entries"].append(t)
            out[f"isr.{name}.nested"].append(1 if stack[c] else 0)
            stack[c].append([cid, t, None])
        elif kind in (K.ISR_EXIT, K.ISR_TO_SCHED) and stack[c]:
            irq, t0, woke = stack[c].pop()
            out[f"isr.{isr_names.get(irq, f'irq{irq}')}.duration"].append((t - t0, t0, t))
            if woke is not None:
                pending.append((irq, t0, woke))
        elif kind == K.TASK_READY:
            if int(ev["ctx_type"][i]) == 2:  # recorded inside an ISR: readied by every open frame
                for frame in stack[c]:
                    if frame[2] is None:
                        frame[2] = tgt
            if tgt not in inst:
                inst[tgt] = [t, True, total[tgt], []]
        elif kind in (K.TASK_BLOCK, K.TASK_TERMINATE):
            if tgt not in inst and sw_since_close[tgt]:
                (s0, e0) = sw_since_close[tgt][0]
                inst[tgt] = [s0, False, e0, [x for x, _ in sw_since_close[tgt]]]
            if tgt in inst:
                start, from_ready, exec0, sws = inst.pop(tgt)
                if sws and tgt not in idle_ids:
                    closed[tgt].append((start, t, from_ready, sws, total[tgt] - exec0))
            sw_since_close[tgt] = []
    for tgt, insts in closed.items():
        _task_metrics(out, f"task.{names.get(tgt, f'task#{tgt}')}", insts)
    out["ctx_switch.count"] = [sum(switches.values())]
    out["_busy"] = busy
    return out


def _task_metrics(out, m, insts):
    for start, end, from_ready, sws, ex in insts:
        out[f"{m}.response_time"].append((end - start, start, end))
        out[f"{m}.exec_time"].append((ex, start, end))
        out[f"{m}.wait_time"].append((end - start - ex, start, end))
        out[f"{m}.preemptions"].append((len(sws) - 1, start, end))
        if from_ready:
            out[f"{m}.ready_latency"].append((sws[0] - start, start, sws[0]))
    for a, b in zip(insts, insts[1:]):
        if a[2] and b[2]:
            out[f"{m}.period.ready"].append((b[0] - a[0], a[0], b[0]))
        out[f"{m}.period.start"].append((b[3][0] - a[3][0], a[3][0], b[3][0]))
        out[f"{m}.separation"].append((b[0] - a[1], a[1], b[0]))


def _ours(trace):
    res = kernel_metrics(trace)
    tab = res.table.to_pandas()
    return res, tab


def _instances_of(tab, metric):
    rows = tab.loc[tab["metric"] == metric, ["start_ts", "end_ts", "value"]]
    return sorted((int(s), int(e), float(v)) for s, e, v in rows.itertuples(index=False))


@pytest.mark.parametrize("key", list(RECORDINGS))
def test_kernel_metrics_match_an_independent_event_loop(key):
    trace = _open(key)
    ref = reference(trace)
    res, tab = _ours(trace)
    gaps = _gaps(trace.events)
    ours = {m for m in tab["metric"].unique() if not m.endswith(".load")}
    want_ids = {k for k, v in ref.items() if not k.startswith("_") and k != "ctx_switch.count"
                and not k.endswith((".entries", ".nested"))
                and any(not _touches(s, e, gaps) for _, s, e in v)}
    assert ours == want_ids, (sorted(ours ^ want_ids))[:10]
    for k in sorted(want_ids):  # every instance of every metric: same interval, same value
        want = sorted((s, e, float(v)) for v, s, e in ref[k] if not _touches(s, e, gaps))
        assert _instances_of(tab, k) == want, k
    sc = res.summary.scalars
    assert sc["ctx_switch.count"][0] == ref["ctx_switch.count"][0]
    span = int(trace.events["ts"][-1]) - int(trace.events["ts"][0])
    for k in (k for k in ref if k.endswith(".entries")):
        m = k[: -len(".entries")]
        scale = 1e9 if trace.meta.tick_hz else 1.0
        assert sc[f"{m}.rate"][0] == pytest.approx(len(ref[k]) * scale / span)
        assert sc[f"{m}.nested"][0] == sum(ref[f"{m}.nested"])
    _check_load_windows(trace, tab, ref["_busy"])


def _check_load_windows(trace, tab, busy):
    """task.<name>.load: per window and core, the reference's running intervals overlapping it."""
    ts = trace.events["ts"]
    t0, t1 = int(ts[0]), int(ts[-1])
    w = max((t1 - t0) // 50, 1)
    names = {t.ctx_id: t.name for t in trace.tasks}
    multi = trace.meta.cores > 1
    for (c, task), spans in busy.items():
        rows = tab[(tab["metric"] == f"task.{names.get(task, f'task#{task}')}.load")
                   & (tab["core"] == (c if multi else -1))]
        got = dict(zip(rows["start_ts"].astype(int), rows["value"]))
        per = defaultdict(int)
        for a, b in spans:
            k = (a - t0) // w
            while t0 + k * w < b and t0 + (k + 1) * w <= t1 + w:
                lo, hi = max(a, t0 + k * w), min(b, t0 + (k + 1) * w)
                if hi > lo and t0 + (k + 1) * w <= t0 + ((t1 - t0) // w) * w:
                    per[t0 + k * w] += hi - lo
                k += 1
        for start, v in per.items():
            assert got.get(start, 0.0) == pytest.approx(100.0 * v / w), (task, c, start)


def test_cpu_load_per_core_against_the_reference_running_time():
    """Per-core CPU load of the ESP32 pair: each core's contexts sum to 100 % and the merged
    figure is the mean of the cores (checked against sums of the per-core busy times)."""
    from analyzers.metrics.cpu_load import cpu_load

    trace = _open("esp32_load_pair")
    sc = cpu_load(trace).summary.scalars
    cores = sorted({k.split(".")[2] for k in sc if k.startswith("cpu.load.core")})
    assert cores == ["core0", "core1"]
    for c in cores:
        parts = [v for k, (v, _) in sc.items() if k.startswith(f"cpu.load.{c}.") and k.count(".") >= 4]
        idle = sc.get(f"cpu.load.{c}.idle", (0.0, ""))[0]
        unknown = sc[f"cpu.load.{c}.unknown"][0]
        assert sum(parts) + idle + unknown == pytest.approx(100.0, abs=1e-6)
        assert sc[f"cpu.load.{c}.total"][0] == pytest.approx(100.0 - idle - unknown)
    for name in ("task.high_load1", "task.high_load2", "isr.SysTick"):
        merged = sc[f"cpu.load.{name}"][0]
        per_core = [sc[f"cpu.load.core{c}.{name}"][0] for c in (0, 1)]
        assert merged == pytest.approx(sum(per_core) / 2)


def test_tracex_statistics_are_reported_and_agree_with_the_switch_count():
    trace = _open("threadx_demo")
    sc = kernel_metrics(trace).summary.scalars
    assert sc["tracex.context_switches"][0] == 18  # TraceX 6.2.1.0's dump of this file
    # TraceX also counts the first switch (out of initialisation); ours counts only switches from a
    # known context (docs/methodology.md): one fewer
    assert sc["ctx_switch.count"][0] == sc["tracex.context_switches"][0] - 1
    assert sc["tracex.thread_preemptions"][0] == 5 and sc["tracex.interrupts"][0] == 3


def test_multi_core_instances_carry_their_core():
    trace = _open("esp32_heaplog_pair")
    tab = kernel_metrics(trace).table.to_pandas()
    assert set(tab["core"].unique()) >= {0, 1}
    assert tab["start_ts"].is_monotonic_increasing is False or len(tab)  # one table, both cores
    assert "cpu" not in tab.columns
    single = kernel_metrics(_open("stm32_gutya")).table.to_pandas()
    loads = single[single["metric"].str.endswith(".load")]
    assert (loads["core"] == -1).all()


def test_ready_state_of_the_reference_is_not_vacuous():
    """The comparison above must compare something: instances with exec times on STM32 and
    ThreadX, ISR durations on ESP32, and the checker must fail on a shifted value."""
    ref = reference(_open("stm32_gutya"))
    assert len(ref["task.myTask01.exec_time"]) > 100 and len(ref["task.myTask01.period.ready"]) > 100
    ref_tx = reference(_open("threadx_demo"))
    assert any(k.endswith(".exec_time") for k in ref_tx) and any(".to_task." in k for k in ref_tx)
    ref_esp = reference(_open("esp32_load_pair"))
    assert len(ref_esp["isr.SysTick.duration"]) > 100 and len(ref_esp["_busy"]) > 4
    # injected fault: one value off by one tick is caught by the same comparison
    res, tab = _ours(_open("stm32_gutya"))
    rows = tab[tab["metric"] == "task.myTask01.response_time"]
    cols = rows[["start_ts", "end_ts", "value"]]
    got = sorted((int(s), int(e), float(v)) for s, e, v in cols.itertuples(index=False))
    want = sorted((s, e, float(v)) for v, s, e in ref["task.myTask01.response_time"])
    assert got == want
    bad = [(s, e, v + 1) if i == 3 else (s, e, v) for i, (s, e, v) in enumerate(want)]
    assert got != bad


@pytest.mark.parametrize("suffix", [".wait_time", ".load", ".to_task", ".period.ready", ".duration"])
def test_the_comparison_catches_one_value_off_by_one_tick(monkeypatch, suffix):
    """Injected fault: one instance of one metric kind off by 1 ns fails the comparison."""
    import analyzers.metrics.isr as mi
    import analyzers.metrics.kernel as km
    import analyzers.metrics.tasks as mt

    real = km.Series

    def shifted(metric, unit, start, end, value, *a, **k):
        if (metric.endswith(suffix) or f"{suffix}." in metric) and len(value):
            value = np.array(value, dtype=float)
            value[len(value) // 2] += 1
        return real(metric, unit, start, end, value, *a, **k)

    for mod in (km, mt, mi):  # every module that makes kernel series
        monkeypatch.setattr(mod, "Series", shifted)
    with pytest.raises(AssertionError):
        test_kernel_metrics_match_an_independent_event_loop("threadx_demo")
