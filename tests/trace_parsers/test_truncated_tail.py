"""A recording cut inside its final record (stopped or copied while being written) keeps every
event before the cut: under ``on_corrupt="recover"`` (the CLI's default) a DATA_LOSS diagnostic at
the cut's offset, under ``"raise"`` an error; the same rule for every format (issue 33 item 5)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analyzers.cli import main
from trace_parsers import open_trace
from trace_parsers.errors import Severity, TraceCorruptError

from ..conftest import CORPUS

REPO = Path(__file__).resolve().parents[2]
PROCPU = CORPUS / "systemview" / "lilu_esp32_freertos_load_s1_procpu.SVDat"
TRX = CORPUS / "tracex" / "tracex-sample_demo_threadx.trx"
CTF = REPO / "captures" / "qemu_netduinoplus2" / "zephyr" / "calib-ctf" / "ref"


def _cut(src: Path, dest: Path, keep: int) -> Path:
    dest.write_bytes(src.read_bytes()[:keep])
    return dest


def _need(p: Path) -> None:
    if not p.exists():
        pytest.skip(f"{p} is not available")


def _truncation(tr) -> list:
    return [d for d in tr.diagnostics if d.code in ("TRUNCATED", "TRX_TRUNCATED")]


def test_systemview_cut_inside_its_final_packet(tmp_path):
    _need(PROCPU)
    p = _cut(PROCPU, tmp_path / "cut.SVDat", 100_000)  # the issue's `head -c 100000`
    whole = open_trace(PROCPU)
    tr = open_trace(p, on_corrupt="recover")
    (d,) = _truncation(tr)
    assert d.severity == Severity.DATA_LOSS and 99_990 <= d.offset < 100_000
    n = len(tr.events)
    assert n == 16_562 and n < len(whole.events)
    assert (tr.columns["ts"] == whole.columns["ts"][:n]).all()  # every event before the cut, unchanged
    with pytest.raises(TraceCorruptError) as e:
        open_trace(p, on_corrupt="raise")
    assert e.value.code == "TRUNCATED" and e.value.offset == d.offset


def test_recover_still_raises_on_damage_that_is_not_a_cut(tmp_path):
    _need(PROCPU)
    data = bytearray(PROCPU.read_bytes())
    data[20_000:20_400] = b"\xff" * 400  # garbage in the middle of the stream
    p = tmp_path / "damaged.SVDat"
    p.write_bytes(bytes(data))
    with pytest.raises(TraceCorruptError) as e:
        open_trace(p, on_corrupt="recover")
    assert e.value.code != "TRUNCATED"


def test_tracex_cut_inside_its_event_area(tmp_path):
    _need(TRX)
    size = TRX.stat().st_size
    p = _cut(TRX, tmp_path / "cut.trx", size - 32 * 7 - 5)
    tr = open_trace(p, on_corrupt="recover")
    assert [d.severity for d in _truncation(tr)] == [Severity.DATA_LOSS] and len(tr.events) > 0
    with pytest.raises(TraceCorruptError):
        open_trace(p, on_corrupt="raise")


def test_ctf_cut_inside_an_event_follows_the_same_rule(tmp_path):
    """CTF used to report the cut as a diagnostic even under ``"raise"``."""
    _need(CTF / "trace.ctf")
    d = tmp_path / "ctf"
    d.mkdir()
    shutil.copy(CTF / "metadata", d / "metadata")
    size = (CTF / "trace.ctf").stat().st_size
    _cut(CTF / "trace.ctf", d / "trace.ctf", size - 3)
    from trace_parsers.ctf import read_ctf

    whole = read_ctf(CTF / "trace.ctf")
    tr = read_ctf(d / "trace.ctf", on_corrupt="recover")
    assert [x.severity for x in _truncation(tr)] == [Severity.DATA_LOSS]
    assert 0 < len(tr.events) < len(whole.events)
    with pytest.raises(TraceCorruptError) as e:
        read_ctf(d / "trace.ctf", on_corrupt="raise")
    assert e.value.code == "TRUNCATED"


def test_info_reads_a_cut_recording_by_default(tmp_path, capsys):
    _need(PROCPU)
    p = _cut(PROCPU, tmp_path / "cut.SVDat", 100_000)
    assert main(["info", str(p)]) == 0
    out = capsys.readouterr().out
    assert "16562" in out.replace(",", "") and "DATA_LOSS TRUNCATED" in out
    assert main(["info", "--on-corrupt", "raise", str(p)]) != 0
    assert "ERR:TRUNCATED" in capsys.readouterr().err
