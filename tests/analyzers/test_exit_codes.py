"""`crosstrace analyze` exit codes are the contract: a fault in a copied capture changes the code."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from analyzers.campaign.capture import _open
from trace_parsers.model import EventKind
from trace_parsers.sigrok.writer import write_sr

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
SRC = CAPTURES / "qemu_netduinoplus2" / "freertos" / "isr_latency" / "ref"


def _analyze(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "analyzers.cli", "analyze", *map(str, args), "--scheduler", "serial"],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture()
def cap(tmp_path: Path) -> Path:
    dest = tmp_path / "in" / "isr_latency" / "ref"
    shutil.copytree(SRC, dest)
    return dest


def _run(folder: Path) -> dict:
    return json.loads((folder / "run.json").read_text())


def _save(folder: Path, run: dict) -> None:
    (folder / "run.json").write_text(json.dumps(run, indent=1))


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _delay_edges(folder: Path, channel: str, delay_ns: int) -> None:
    """Rewrite every logic file with each edge of one channel ``delay_ns`` later, as a real recording
    would be, and update run.json's hashes so that only the disagreement remains."""
    run = _run(folder)
    for entry in run["logic"]:
        path = folder / entry["file"]
        capt = _open(path)
        rate = int(entry["profile"]["samplerate"])
        shift = int(round(delay_ns * rate / 1e9))
        ev = capt.events
        edges = []
        for c in capt.channels:
            edge = (ev["kind"] == EventKind.EDGE_RISE) | (ev["kind"] == EventKind.EDGE_FALL)
            idx = np.round(ev["ts"][edge & (ev["marker"] == c.index)] * rate / 1e9).astype(np.int64)
            edges.append(idx + (shift if c.name == channel else 0))
        write_sr(
            path,
            samplerate=rate,
            channels=[c.name for c in capt.channels],
            edges=edges,
            initial=[c.initial_level for c in capt.channels],
            total_samples=int(entry["samples"]) + shift,
        )
        entry["sha256"] = _sha(path)
    _save(folder, run)


def test_bundled_capture_passes_with_exit_0(cap: Path, tmp_path: Path):
    r = _analyze(cap.parents[1], "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    assert "FAIL in 0, INCOMPLETE in 0" in r.stdout


def test_delayed_pin_fails_with_exit_3(cap: Path, tmp_path: Path):
    _delay_edges(cap, "isr.task_wake", 60)  # 60 ns: 4.7 % of the ISR -> task latency
    r = _analyze(cap.parents[1], "-o", tmp_path / "out")
    assert r.returncode == 3, (r.stdout, r.stderr)
    xv = json.loads((tmp_path / "out" / "captures" / "isr_latency" / "ref" / "result.json").read_text())
    row = next(x for x in xv["crossval"] if x["metric"] == "isr.to_task.latency")
    assert row["verdict"] == "FAIL" and row["raw_diff_ns"] == pytest.approx(-60, abs=2)
    assert _analyze(cap.parents[1], "-o", tmp_path / "out2", "--allow-fail").returncode == 0


def test_changed_recording_is_a_hash_error_naming_the_file(cap: Path, tmp_path: Path):
    p = cap / "logic-la100.sr"
    data = bytearray(p.read_bytes())
    data[-100] ^= 0xFF
    p.write_bytes(bytes(data))
    r = _analyze(cap.parents[1], "-o", tmp_path / "out")
    assert r.returncode == 1
    assert "logic-la100.sr" in r.stderr and "AN_HASH_MISMATCH" in r.stderr


def test_declared_edge_count_mismatch_is_incomplete_exit_4(cap: Path, tmp_path: Path):
    run = _run(cap)
    run["logic"][1]["edges"]["isr.task_wake"] -= 50  # the capture holds 50 more edges than recorded
    _save(cap, run)
    r = _analyze(cap.parents[1], "-o", tmp_path / "out")
    assert r.returncode == 4, (r.stdout, r.stderr)
    assert "isr.task_wake" in r.stderr and "declares" in r.stderr


def test_negative_control_that_passes_is_exit_5(cap: Path, tmp_path: Path):
    run = _run(cap)
    run["negative_control"] = {"kind": "trace_delay", "site": "isr.task_wake", "instructions": 64,
                               "expected_delta_ns": 64}  # fmt: skip
    run["expect"] = {"verdict": "FAIL", "metric": "isr.to_task.latency"}
    _save(cap, run)
    r = _analyze(cap.parents[1], "-o", tmp_path / "out")
    assert r.returncode == 5 and "NEGATIVE CONTROL" in r.stderr


def test_calibration_measured_elsewhere_is_declared_and_reported(cap: Path, tmp_path: Path):
    from analyzers.crossval.calibrate_cli import measure

    _delay_edges(cap, "isr.task_wake", 60)
    block = measure(cap)  # (here measured on the same folder; in use, on a calibration capture)
    assert block["sites"]["isr.task_wake"] - block["sites"]["isr.enter"] == pytest.approx(-60, abs=2)
    run = _run(cap)
    run["calibration"] = block
    _save(cap, run)
    r = _analyze(cap.parents[1], "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "out" / "captures" / "isr_latency" / "ref" / "result.json").read_text())
    row = next(x for x in res["crossval"] if x["metric"] == "isr.to_task.latency" and x["profile"] == "ideal")
    assert row["calibration_source"].startswith("declared: crosstrace calibrate")
    assert row["raw_diff_ns"] == pytest.approx(-60, abs=2) and abs(row["rel_diff_pct"]) < 0.3


def test_foreign_exception_is_internal_and_names_the_recording(cap: Path, tmp_path: Path, monkeypatch):
    from analyzers.campaign import capture as C

    def boom(*a, **k):
        raise ValueError("invalid literal")

    monkeypatch.setattr(C, "_decoded", boom)
    res = C.analyze_capture(cap, "isr_latency/ref", tmp_path / "out", force=True)
    assert res["status"] == "failed" and res["code"] == "INTERNAL"
    assert "trace.SVDat" in res["error"] and "ValueError" in res["error"]


def test_failed_logic_names_file_and_offset_and_lists_kept_trace_events(cap: Path, tmp_path: Path):
    from analyzers.campaign import capture as C

    p = cap / "logic.sr"
    p.write_bytes(p.read_bytes()[:200])  # cut inside the zip: the sigrok reader gives up
    run = _run(cap)
    run["logic"][0]["sha256"] = _sha(p)  # as if it had been recorded so
    _save(cap, run)
    res = C.analyze_capture(cap, "isr_latency/ref", tmp_path / "out", force=True)
    assert res["status"] == "failed" and res["code"] != "INTERNAL"
    assert res["file"] and res["file"].endswith("logic.sr") and res["offset"] is not None
    assert res["kept_events"] == ["events-trace.ctev.parquet"] and "kept" in res["notes"][0]
