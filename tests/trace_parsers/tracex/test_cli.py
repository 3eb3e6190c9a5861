"""`crosstrace info` / `crosstrace events` on .trx files (generic over Trace)."""

from __future__ import annotations

import io
import json

import pytest

from analyzers.cli import main, print_summary, summarize
from trace_parsers import open_trace

from .helpers import CORPUS_FILES

pytestmark = pytest.mark.corpus


def test_info_json(trx_corpus, capsys):
    assert main(["info", "--json", str(trx_corpus / CORPUS_FILES[0])]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["format"] == "tracex" and s["events"] == 974 and s["ts_unit"] == "ticks"
    assert s["duration"] == 156206 and len(s["tasks"]) == 9
    assert s["counts_by_kind"]["ISR_ENTER"] == 3
    assert "TRX_NO_TICK_HZ" in {d["code"] for d in s["diagnostics"]}


def test_info_text_with_tick_hz(trx_corpus):
    # print_summary binds sys.stdout when analyzers.cli is imported: render into a buffer instead
    assert main(["info", "--tick-hz", "1000000", str(trx_corpus / CORPUS_FILES[2])]) == 0
    buf = io.StringIO()
    print_summary(summarize(open_trace(trx_corpus / CORPUS_FILES[2], tick_hz=1_000_000)), buf)
    out = buf.getvalue()
    assert "tracex" in out and "0.949000 s" in out and "NetX IP Instance 0" in out


def test_events_csv(trx_corpus, tmp_path, capsys):
    out = tmp_path / "ev.csv"
    assert main(["events", str(trx_corpus / CORPUS_FILES[1]), "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 951 and "kind_name" in lines[0]
    assert "wrote 950 events" in capsys.readouterr().out


def test_info_bad_file(tmp_path, capsys):
    p = tmp_path / "x.trx"
    p.write_bytes(b"BTXT" + bytes(10))
    assert main(["info", str(p)]) == 1
    assert "TRX_BAD_HEADER" in capsys.readouterr().err


def test_info_takes_tick_hz_from_the_capture_folders_run_json(tmp_path, capsys) -> None:
    """A .trx states no tick rate; `crosstrace info` reads it from run.json beside the file."""
    import json
    import shutil

    from analyzers.cli import main

    from ...conftest import CAPTURES

    src = next(CAPTURES.glob("qemu_netduinoplus2/threadx/isr_latency/*/trace.trx"), None)
    if src is None:
        import pytest

        pytest.skip("no committed ThreadX capture")
    shutil.copy(src, tmp_path / "trace.trx")
    assert main(["info", "--json", str(tmp_path / "trace.trx")]) == 0
    assert json.loads(capsys.readouterr().out)["tick_hz"] is None
    (tmp_path / "run.json").write_text(json.dumps({"trace": {"file": "trace.trx", "tick_hz": 1_000_000_000}}))
    assert main(["info", "--json", str(tmp_path / "trace.trx")]) == 0
    assert json.loads(capsys.readouterr().out)["tick_hz"] == 1_000_000_000
    assert main(["info", "--json", "--tick-hz", "500", str(tmp_path / "trace.trx")]) == 0
    assert json.loads(capsys.readouterr().out)["tick_hz"] == 500
