"""``crosstrace info`` on an empty file: one clear line naming the file, offset 0 and what was
expected (issue 14: it printed "no reader recognises this content (first bytes )")."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzers.cli import main

CASES = [("trace.SVDat", "SystemView"), ("t.trx", "TraceX"), ("la.sr", "sigrok"), ("la.dsl", "DSView"),
         ("la.vcd", "VCD"), ("la.csv", "Saleae digital CSV"), ("la.bin", "Saleae binary"),
         ("x.ctf", "CTF"), ("recording", "recording: SystemView, TraceX")]


@pytest.mark.parametrize(("name", "expected"), CASES)
def test_info_on_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                            expected: str) -> None:
    f = tmp_path / name
    f.write_bytes(b"")
    assert main(["info", str(f)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert f"{f}:0x0:" in line and "at offset 0" in line and "empty (0 bytes)" in line
    assert f"expected a {expected}" in line and "(ERR:FMT_UNKNOWN)" in line
    assert "first bytes" not in line


def test_short_file_still_shows_its_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "short.SVDat"
    f.write_bytes(b"ab")
    assert main(["info", str(f)]) == 1
    assert "(first bytes 61 62)" in capsys.readouterr().err
