"""Every capture of ../shared/corpus/logic against its facts.json entry (sigrok-cli ground truth)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import corpus_dir, corpus_facts
from trace_parsers import TraceError, detect_format, open_trace
from trace_parsers.model import EventKind, ticks_to_ns

#: captures whose decode takes more than a few seconds on 2 cores
HUGE = {"spi_enc28j60_1ghz.sr", "usb_stm32_dfu_50mhz.sr", "uart_amulet_bootup_10mhz.sr",
        "pwm_lidarlite_5mhz.sr"}
EDGE_FILES = ["uart_hello_115200_8n1.sr", "uart_counter_19200_8n1.sr", "uart_gps_nmea_9600_v1.sr",
              "uart_unitsize4_115200.sr", "uart_glitches_2mhz.sr", "uart_amulet_bootup_10mhz.sr",
              "pwm_lidarlite_5mhz.sr", "pwm_alsa_snippet_24mhz_unchunked.sr",
              "clock_1mhz_16ch_12mhz_v1.sr", "dcf77_1800s_1mhz_v1.sr", "spi_enc28j60_1ghz.sr",
              "usb_stm32_dfu_50mhz.sr", "swd_stm32f429_8mhz.sr", "mixed_100khz_logic_analog_12mhz.sr",
              "vcd_chronovu_la8_spi.vcd", "dslogic_demo_uart_40mhz.dsl"]
FORMAT_OF = {"sr": "sigrok", "vcd": "vcd", "dsl": "dsl", "saleae_csv": "saleae_csv",
             "sal": "saleae_project", "logicdata": "saleae_project"}


def _params(files: list[str]) -> list:
    return [pytest.param(f, marks=pytest.mark.slow) if f in HUGE else f for f in files]


@pytest.fixture(scope="module")
def facts() -> dict:
    return corpus_facts("logic")


def test_every_corpus_file_is_covered(facts: dict) -> None:
    covered = set(EDGE_FILES) | {"no_samplerate_v1.sr", "saleae_logic2_csv_iso8601_74hc595.csv",
                                 "saleae_logic2_mdfu_uart.sal", "saleae_logic1_can_500k.logicdata"}
    assert set(k for k in facts if not k.startswith("_")) == covered


@pytest.mark.parametrize("name", sorted(FORMAT_OF))
def test_detected_by_content(facts: dict, name: str) -> None:
    for fname, f in facts.items():
        if not fname.startswith("_") and f["format"] == name:
            assert detect_format(corpus_dir("logic") / fname) == FORMAT_OF[name], fname


def _channel_edges(tr, index: int) -> np.ndarray:
    ev = tr.events
    is_edge = (ev["kind"] == EventKind.EDGE_RISE) | (ev["kind"] == EventKind.EDGE_FALL)
    sel = is_edge & (ev["marker"] == index)
    return ev[sel]


@pytest.mark.parametrize("name", _params(EDGE_FILES))
def test_edges_match_facts(facts: dict, name: str) -> None:
    f = facts[name]
    tr = open_trace(corpus_dir("logic") / name)
    assert tr.meta.tick_hz == f["samplerate_hz"]
    assert tr.meta.clock_domain == "la_samples"
    assert tr.meta.extra["total_samples"] == f["total_samples"] == f["vcd_end_marker_samples"]
    dur = ticks_to_ns(np.array([f["total_samples"]]), f["samplerate_hz"])[0]
    assert tr.meta.extra["duration_ns"] == int(dur)
    assert [c.name for c in tr.channels] == list(f["channels"])
    assert np.all(np.diff(tr.events["ts"]) >= 0)
    for ch in tr.channels:
        cf = f["channels"][ch.name]
        ev = _channel_edges(tr, ch.index)
        rise = int(np.count_nonzero(ev["kind"] == EventKind.EDGE_RISE))
        got = (ch.initial_level, rise, len(ev) - rise)
        assert got == (cf["initial"], cf["rising"], cf["falling"]), ch.name
        if len(ev):
            first_last = (int(ev["ts_raw"][0]), int(ev["ts_raw"][-1]))
            assert first_last == (cf["first_edge_sample"], cf["last_edge_sample"])
            assert int(ev["ts"][-1]) == round(cf["last_edge_s"] * 1e9) or \
                abs(int(ev["ts"][-1]) - cf["last_edge_s"] * 1e9) < 1
            # levels alternate and value = new level; src_offset = sample index
            assert np.array_equal(ev["value"], np.where(ev["kind"] == EventKind.EDGE_RISE, 1, 0))
            assert np.all(ev["value"][1:] != ev["value"][:-1])
            assert ev["value"][0] == 1 - cf["initial"]
            assert np.array_equal(ev["src_offset"], ev["ts_raw"])
    assert not tr.diagnostics_at_least(2)  # no DATA_LOSS on clean captures


def test_sigrok_v1_metadata_quirks(facts: dict) -> None:
    tr = open_trace(corpus_dir("logic") / "uart_gps_nmea_9600_v1.sr")
    assert tr.meta.source_version == "1"
    assert [c.name for c in tr.channels] == ["TX"]  # not "TX\ntrigger1 = 0"
    assert tr.meta.extra["total_probes"] == 32 and tr.meta.extra["unitsize"] == 1


def test_analog_channels_skipped_with_notice() -> None:
    tr = open_trace(corpus_dir("logic") / "mixed_100khz_logic_analog_12mhz.sr")
    codes = {d.code: d for d in tr.diagnostics}
    assert codes["SR_ANALOG_SKIPPED"].severity.name == "NOTICE"
    assert tr.meta.extra["analog_channels"] == {"analog9": "A0"}


def test_no_samplerate_rejected_unless_given(facts: dict) -> None:
    p = corpus_dir("logic") / "no_samplerate_v1.sr"
    with pytest.raises(TraceError) as ei:
        open_trace(p)
    assert ei.value.code == "SR_NO_SAMPLERATE" and str(p) in str(ei.value)
    tr = open_trace(p, samplerate=1_000_000)
    assert tr.meta.tick_hz == 1_000_000
    assert tr.meta.extra["total_samples"] == facts["no_samplerate_v1.sr"]["total_samples"]
    assert [c.name for c in tr.channels] == ["SCL", "SDA"]


def test_saleae_csv_iso8601(facts: dict) -> None:
    f = facts["saleae_logic2_csv_iso8601_74hc595.csv"]
    tr = open_trace(corpus_dir("logic") / f["file"])
    assert tr.meta.tick_hz == 1_000_000_000  # no rate in the CSV: 1 ns ticks
    assert tr.meta.extra["rows"] == f["rows"]
    assert tr.meta.extra["total_samples"] == round(f["span_s"] * 1e9)
    assert [c.name for c in tr.channels] == f["header"][1:]
    for ch in tr.channels:
        cf = f["channels"][ch.name]
        ev = _channel_edges(tr, ch.index)
        rise = int(np.count_nonzero(ev["kind"] == EventKind.EDGE_RISE))
        assert (ch.initial_level, rise, len(ev) - rise) == (cf["initial"], cf["rising"], cf["falling"])
        assert int(ev["ts"][0]) == round(cf["first_edge_s"] * 1e9)
        assert int(ev["ts"][-1]) == round(cf["last_edge_s"] * 1e9)
    from trace_parsers.saleae.csv import parse_time_ns
    assert tr.meta.extra["start_unix_ns"] == parse_time_ns(f["first_timestamp"])[0]


@pytest.mark.parametrize("name", ["saleae_logic2_mdfu_uart.sal", "saleae_logic1_can_500k.logicdata"])
def test_saleae_saves_refused_with_advice(name: str) -> None:
    p = corpus_dir("logic") / name
    with pytest.raises(TraceError) as ei:
        open_trace(p)
    assert ei.value.code == "SALEAE_UNSUPPORTED"
    assert "Export" in str(ei.value) and str(p) in str(ei.value)


def test_sal_message_reports_meta(facts: dict) -> None:
    f = facts["saleae_logic2_mdfu_uart.sal"]
    with pytest.raises(TraceError) as ei:
        open_trace(corpus_dir("logic") / f["file"])
    assert f["device"] in str(ei.value) and str(f["digital_samplerate_hz"]) in str(ei.value)


def test_dsl_trigger_metadata() -> None:
    tr = open_trace(corpus_dir("logic") / "dslogic_demo_uart_40mhz.dsl")
    assert tr.meta.extra["trigger_pos"] == 0
    assert tr.meta.extra["trigger_time_unix_ms"] == 1622596846029
