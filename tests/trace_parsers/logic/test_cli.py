"""`crosstrace info`, `events` and `decode` on logic captures."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from analyzers.cli import main
from tests.conftest import corpus_dir
from trace_parsers.sigrok import write_sr
from trace_parsers.sigrok.protocol import sigrok_cli


@pytest.fixture
def capture(tmp_path):
    return write_sr(tmp_path / "c.sr", samplerate=2_000_000, channels=["CT_MARK", "idle"],
                    edges=[np.array([10, 30, 50, 90, 91]), np.array([])], initial=[0, 1],
                    total_samples=200)


def test_info_json(capture, capsys) -> None:
    assert main(["info", str(capture), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["format"] == "sigrok" and s["tick_hz"] == 2_000_000 and s["clock_domain"] == "la_samples"
    assert [(c["name"], c["initial_level"], c["edges"]) for c in s["channels"]] == \
        [("CT_MARK", 0, 5), ("idle", 1, 0)]
    assert s["capture"] == {"samplerate": 2_000_000, "total_samples": 200, "duration_ns": 100_000,
                            "sample_period_ns": 500.0}
    assert s["counts_by_kind"] == {"EDGE_RISE": 3, "EDGE_FALL": 2}


def test_info_text(capture, capsys) -> None:
    assert main(["info", str(capture)]) == 0
    out = capsys.readouterr().out
    assert "200 samples at 2000000 Hz" in out and "CT_MARK" in out and "edges 5" in out


def test_info_samplerate_option(capsys) -> None:
    p = corpus_dir("logic") / "no_samplerate_v1.sr"
    assert main(["info", str(p)]) == 1
    assert "SR_NO_SAMPLERATE" in capsys.readouterr().err
    assert main(["info", str(p), "--samplerate", "4000000", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tick_hz"] == 4_000_000


def test_events_csv(capture, tmp_path, capsys) -> None:
    out = tmp_path / "e.csv"
    assert main(["events", str(capture), "-o", str(out)]) == 0
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["ts"], r["kind_name"], r["value"]) for r in rows] == [
        ("5000", "EDGE_RISE", "1"), ("15000", "EDGE_FALL", "0"), ("25000", "EDGE_RISE", "1"),
        ("45000", "EDGE_FALL", "0"), ("45500", "EDGE_RISE", "1")]


def test_decode_uart(capsys) -> None:
    if sigrok_cli() is None:
        pytest.skip("sigrok-cli not installed")
    p = corpus_dir("logic") / "uart_hello_115200_8n1.sr"
    for backend in ("numpy", "sigrok"):
        assert main(["decode", str(p), "--uart", "TX", "--baud", "115200", "--backend", backend]) == 0
        assert capsys.readouterr().out == "Hello World!\r\n" * 3


def test_decode_uart_of_a_1gs_capture_takes_seconds(capsys) -> None:
    """The FFT capture (1 GS/s): sigrok-cli took 17–64 s; the default decodes it in well under 3 s
    and gives the firmware's console byte for byte (issue 33 item 9)."""
    import time
    from pathlib import Path

    ref = Path(__file__).resolve().parents[3] / "captures/qemu_netduinoplus2/freertos/fft_workload/ref"
    t0 = time.perf_counter()
    assert main(["decode", str(ref / "logic.sr"), "--uart", "uart.tx"]) == 0
    took = time.perf_counter() - t0
    assert capsys.readouterr().out == (ref / "uart.log").read_bytes().decode("latin-1")
    assert took < 3.0, took
