"""Event files (``*.ctev.parquet``) round-trip; firmware console lines parse."""

import numpy as np
import pytest

from analyzers import _synth as S
from analyzers._io import load_trace, save_trace
from analyzers.console import RESULT_RE, parse_done, parse_results
from trace_parsers.errors import TraceFormatError
from trace_parsers.model import Diagnostic, Severity, Trace, validate


def test_event_file_roundtrip(tmp_path):
    sc = S.isr(n=10)
    tr = S.to_trace(sc)
    tr = Trace(
        tr.events,
        tr.meta,
        tasks=tr.tasks,
        isrs=tr.isrs,
        markers=tr.markers,
        diagnostics=[Diagnostic("SV_OVERFLOW", Severity.DATA_LOSS, 12, 3, "lost")],
        strings=["hello"],
    )
    save_trace(tr, tmp_path / "t.ctev.parquet")
    back = load_trace(tmp_path / "t.ctev.parquet")
    np.testing.assert_array_equal(back.events, tr.events)
    assert back.meta == tr.meta and back.tasks == tr.tasks and back.isrs == tr.isrs
    assert back.markers == tr.markers and back.diagnostics == tr.diagnostics and back.strings == ["hello"]
    assert validate(back) == []


def test_event_file_rejects_other_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [1]}), tmp_path / "x.ctev.parquet")
    with pytest.raises(TraceFormatError, match="not a crosstrace event file"):
        load_trace(tmp_path / "x.ctev.parquet")


def test_console_lines():
    lines = [
        "CT_INFO ts_hz=180000000",
        "CT_RESULT ctx_switch.yield n=399 min=360 mean=416.50 max=417 unit=ticks ts_hz=180000000",
        "CT_RESULT fft.duration n=4 min=1 mean=2.00 max=3 unit=ns",
        "CT_RESULT broken n=x",
        "CT_DONE ok=2 fail=0",
    ]
    r = parse_results(lines)
    assert [x["metric"] for x in r] == ["ctx_switch.yield", "fft.duration"]
    assert r[0]["mean_ns"] == pytest.approx(416.5 / 0.18) and r[0]["min"] == 360
    assert r[1]["mean_ns"] == 2.0 and r[1]["ts_hz"] is None
    assert parse_done(lines) == (2, 0) and parse_done(lines[:2]) is None
    assert RESULT_RE.match(lines[1])["unit"] == "ticks"
