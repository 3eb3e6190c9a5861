"""`crosstrace analyze` on a SystemView recording cut inside its final packet (a recording stopped or
copied while being written): by default everything before the cut is analyzed, the capture carries
a DATA_LOSS diagnostic at the cut's offset, the summary says so, and the exit code is 0;
``--on-corrupt raise`` still fails the capture."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import corpus_dir

SOURCE = "lilu_esp32_freertos_load_s1_procpu.SVDat"


def _analyze(folder: Path, out: Path, *extra: str) -> tuple[int, str, dict]:
    p = subprocess.run([sys.executable, "-m", "analyzers.cli", "analyze", str(folder), "-o", str(out),
                        "--scheduler", "serial", *extra], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr, json.loads((out / "manifest.json").read_text())


@pytest.mark.corpus
def test_a_cut_recording_is_analyzed_up_to_the_cut(tmp_path: Path) -> None:
    src = corpus_dir("systemview") / SOURCE
    if not src.is_file():
        pytest.skip("corpus recording missing")
    rec = tmp_path / "in" / "cut.SVDat"
    rec.parent.mkdir()
    rec.write_bytes(src.read_bytes()[:100_000])  # `head -c 100000`: inside a packet
    rc, text, m = _analyze(rec.parent, tmp_path / "out")
    assert rc == 0, text
    cap = m["captures"][0]
    assert cap["status"] == "ok", cap
    result = json.loads((tmp_path / "out" / "captures" / cap["capture"] / "result.json").read_text())
    cut = [d for d in result["diagnostics"] if d["code"] == "TRUNCATED"]
    assert len(cut) == 1 and cut[0]["severity"] == "DATA_LOSS" and 0 < cut[0]["offset"] < 100_000
    assert result["sources"]["trace"]["events"] > 16_000
    assert "data lost in 1" in text and "DATA LOST" in text and "TRUNCATED" in text
    assert "negative controls" not in text  # none in a user's folder: not mentioned
    rc, text, m = _analyze(rec.parent, tmp_path / "out2", "--on-corrupt", "raise")
    assert rc == 1 and m["captures"][0]["status"] == "failed" and "TRUNCATED" in text, text
