"""`crosstrace info` / `crosstrace events` on SystemView files (the generic commands)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from analyzers.cli import main
from tests.conftest import corpus_dir

from ._encoder import HEADER_OPENOCD, Encoder


def _file(tmp_path: Path) -> Path:
    enc = Encoder()
    enc.fixed(10, 1)
    enc.init(2, 1_000_000, 1_000_000, 0x20000000, 0)
    enc.task_info(3, 0x10, 2, "alpha")
    enc.fixed(4, 10, 0x10)
    enc.fixed(17, 20)
    p = tmp_path / "x.SVDat"
    p.write_bytes(enc.bytes(HEADER_OPENOCD))
    return p


def test_info_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _file(tmp_path)
    assert main(["info", str(p), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["format"] == "systemview" and s["tick_hz"] == 1_000_000
    assert s["events"] == 5 and s["duration"] == 19_000
    assert [t["name"] for t in s["tasks"]] == ["alpha"]


def test_events_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _file(tmp_path)
    out = tmp_path / "ev.csv"
    assert main(["events", str(p), "-o", str(out)]) == 0
    with out.open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 5
    assert capsys.readouterr().out.startswith("wrote 5 events")


def test_info_on_corpus_and_bad_file(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    f = corpus_dir("systemview") / "gutya_stm32f746_freertos_raw.SVdat"
    assert main(["info", str(f), "--json"]) == 0
    s = json.loads(capfd.readouterr().out)
    assert [d["code"] for d in s["diagnostics"]] == ["SV_OVERFLOW"]
    bad = corpus_dir("systemview") / "lilu_esp32_freertos_corrupt_appcpu.SVDat"
    assert main(["info", str(bad)]) == 1
    assert "CORRUPT_REGION" in capfd.readouterr().err
    assert main(["info", str(bad), "--on-corrupt", "skip"]) == 0


def test_info_path_imports_no_heavy_frames(tmp_path: Path) -> None:
    p = _file(tmp_path)
    code = ("import sys; from analyzers.cli import main; main(['info', sys.argv[1]]); "
            "bad = [m for m in ('pandas', 'pyarrow', 'polars') if m in sys.modules]; "
            "assert not bad, bad")
    r = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
