"""Every corpus recording decodes and matches ../shared/corpus/systemview/facts.json."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import CORPUS, corpus_dir, sha256_of
from trace_parsers import TraceCorruptError, open_trace
from trace_parsers.model import EventKind, Severity, validate
from trace_parsers.systemview import read_systemview

_FACTS_PATH = CORPUS / "systemview" / "facts.json"
_FACTS = json.loads(_FACTS_PATH.read_text()) if _FACTS_PATH.is_file() else {}
FILES = sorted(k for k in _FACTS if not k.startswith("_"))
CORRUPT = [f for f in FILES if _FACTS[f]["decoder"]["streams"]["Core0"]["decode_error"]
           and "payload" in _FACTS[f]["decoder"]["streams"]["Core0"]["decode_error"]]
CLEAN = [f for f in FILES if f not in CORRUPT]


@pytest.fixture(scope="module")
def facts() -> dict:
    corpus_dir("systemview")
    return _FACTS


def _read(name: str, **kw):
    path = corpus_dir("systemview") / name
    assert sha256_of(path) == _FACTS[name]["sha256"], "corpus file differs from facts.json"
    return read_systemview(path, **kw)


@pytest.mark.parametrize("name", CLEAN)
def test_clean_file_matches_facts(name: str, facts: dict) -> None:
    tr = _read(name)
    f = facts[name]["decoder"]["streams"]
    got = tr.meta.extra["streams"]
    assert set(got) == set(f)
    for sname, exp in f.items():
        g = got[sname]
        assert g["packets"] == exp["packets"]
        assert g["counts_by_id"] == exp["counts_by_id"]
        assert g["sync_zero_bytes"] == exp["sync_zero_bytes"]
        assert {k: g["init"][k] for k in ("sys_freq", "cpu_freq", "ram_base", "id_shift")} == \
            {k: exp["init"][k] for k in ("sys_freq", "cpu_freq", "ram_base", "id_shift")}
        assert g["task_info"] == exp["task_info"]
        assert g["first_ts_ticks"] == exp["first_ts_ticks_cumulative"]
        assert g["last_ts_ticks"] == exp["last_ts_ticks_cumulative"]
        assert g["overflow_packets"] == exp["overflow_packets"]
        assert g["overflow_values"][:5] == exp["overflow_payload_values_first5"]
        if exp["overflow_packets"]:
            assert g["overflow_values"][-1] == exp["overflow_payload_last"]
        assert g["sysdesc_count"] == exp["sysdesc_count"]
        assert g["sysdesc"][:len(exp["sysdesc_first"])] == exp["sysdesc_first"]
        assert [(m["id"], m["evt_off"], m["desc"]) for m in g["modules"]] == \
            [(m["id"], m["evt_off"], m["desc"]) for m in exp["modules"]]
        assert g["esp_core_bit_counts"] == exp["esp_core_bit_counts"]
        assert [list(x) for x in g["systime"]] == [list(x) for x in exp["systime"]]
    # the events table: every non-NOP packet is a row, time in ns from INIT.SysFreq
    packets = sum(e["packets"] - e["counts_by_id"].get("0", 0) for e in f.values())
    assert len(tr) == packets
    assert validate(tr) == []
    assert tr.meta.tick_hz == next(iter(f.values()))["init"]["sys_freq"]
    dur = max(e["duration_s_first_to_last"] for e in f.values())
    assert abs(tr.duration - dur * 1e9) < 1e3
    names = {t["name"] for e in f.values() for t in e["task_info"].values()}
    assert names <= {t.name for t in tr.tasks}
    counts = tr.counts_by_kind()
    all_ids = {int(k): v for e in f.values() for k, v in e["counts_by_id"].items()}
    for evt, kind in ((4, "TASK_SWITCH_IN"), (2, "ISR_ENTER"), (17, "IDLE"), (18, "ISR_TO_SCHED"),
                      (6, "TASK_READY"), (1, "OVERFLOW")):
        assert counts.get(kind, 0) == sum(int(v) for e in f.values()
                                          for k, v in e["counts_by_id"].items() if int(k) == evt)
    assert all_ids  # something decoded
    # every error-free overflow shows up as a DATA_LOSS diagnostic
    if any(e["overflow_packets"] for e in f.values()):
        assert any(d.code == "SV_OVERFLOW" and d.severity == Severity.DATA_LOSS for d in tr.diagnostics)


@pytest.mark.parametrize("name", CLEAN)
def test_open_trace_sniffs_content(name: str) -> None:
    tr = open_trace(corpus_dir("systemview") / name)
    assert tr.meta.source_format == "systemview"


@pytest.mark.parametrize("name", CORRUPT)
def test_corrupt_stream_raises_with_offset(name: str, facts: dict) -> None:
    exp = facts[name]["decoder"]["streams"]["Core0"]
    with pytest.raises(TraceCorruptError) as ei:
        _read(name)
    assert ei.value.offset == facts[name]["header_bytes"] + exp["error_offset_in_stream"]
    assert name in str(ei.value)


@pytest.mark.parametrize("name", CORRUPT)
def test_corrupt_stream_keeps_decodable_events(name: str, facts: dict) -> None:
    exp = facts[name]["decoder"]["streams"]["Core0"]
    with pytest.warns(UserWarning, match="CORRUPT_REGION"):
        tr = _read(name, on_corrupt="warn")
    loss = [d for d in tr.diagnostics if d.severity == Severity.DATA_LOSS]
    assert {"CORRUPT_REGION", "SV_RESYNC"} <= {d.code for d in loss}
    g = tr.meta.extra["streams"]["Core0"]
    # every packet before the structural failure is kept (the corpus decoder stops at the same byte)
    assert g["packets"] == exp["packets"]
    assert g["counts_by_id"] == exp["counts_by_id"]
    assert g["last_ts_ticks"] == exp["last_ts_ticks_cumulative"]
    assert int(tr.events["src_offset"].max()) < facts[name]["header_bytes"] + exp["error_offset_in_stream"]
    assert validate(tr) == []


def test_esp_per_core_pair_opened_together() -> None:
    d = corpus_dir("systemview")
    a, b = d / "espidf_esp32_heaplog_2025_core0.svdat", d / "espidf_esp32_heaplog_2025_core1.svdat"
    tr = read_systemview([a, b])
    one, two = read_systemview(a), read_systemview(b)
    assert len(tr) == len(one) + len(two)
    assert tr.meta.cores == 2
    assert set(np.unique(tr.events["core"]).tolist()) == {0, 1}
    assert np.all(np.diff(tr.events["ts"]) >= 0)
    assert validate(tr) == []


def test_esp_extension_core_bit_splits_cores() -> None:
    tr = read_systemview(corpus_dir("systemview") / "espidf_esp32_heaplog_mcore_espext_2024.svdat")
    per_core = dict(zip(*[x.tolist() for x in np.unique(tr.events["core"], return_counts=True)]))
    assert set(per_core) == {0, 1}
    assert tr.meta.cores == 2


def test_context_tracking_on_freertos_dump() -> None:
    tr = read_systemview(corpus_dir("systemview") / "nghiaphamsg_stm32f446_freertos_hello_raw.SVdat")
    ev = tr.events
    isr = ev[ev["kind"] == EventKind.ISR_ENTER]
    assert np.all(isr["ctx_type"] == 2) and np.all(isr["ctx_id"] == 15)  # SysTick = exception 15
    sw = ev[ev["kind"] == EventKind.TASK_SWITCH_IN]
    assert np.all(sw["ctx_type"] == 1) and np.all(sw["ctx_id"] >= 0)
    assert {i.number: i.name for i in tr.isrs}.get(15) == "SysTick"
    assert tr.meta.extra["description"] == "freertos_segger"
    assert tr.meta.rtos == "FreeRTOS"
