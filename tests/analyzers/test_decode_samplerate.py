"""A campaign decodes a logic export that states no sample rate (Saleae CSV, binary v0) with the
rate its run.json profile states, and leaves files that state their own rate alone."""

from __future__ import annotations

from pathlib import Path

from analyzers.campaign.decode import _open
from trace_parsers.sigrok.writer import write_sr


def test_run_json_rate_counts_saleae_samples(tmp_path: Path) -> None:
    p = tmp_path / "digital.csv"
    p.write_text("Time [s],a\n0.000000000,0\n0.000002500,1\n0.000010000,1\n")
    ns = _open(p)
    assert ns.meta.extra["samplerate"] is None and ns.meta.tick_hz == 1_000_000_000
    tr = _open(p, samplerate=2_000_000)
    assert (tr.meta.tick_hz, tr.meta.extra["samplerate_source"]) == (2_000_000, "option")
    assert not [d for d in tr.diagnostics if d.code == "SALEAE_NO_SAMPLERATE"]
    assert tr.events["ts_raw"].tolist() == [5]  # 2.5 µs at 2 MHz


def test_file_rate_wins_over_run_json(tmp_path: Path) -> None:
    sr = write_sr(tmp_path / "c.sr", samplerate=1_000_000, channels=["a"], edges=[[3]], initial=[0],
                  total_samples=10)
    assert _open(sr, samplerate=2_000_000).meta.tick_hz == 1_000_000
