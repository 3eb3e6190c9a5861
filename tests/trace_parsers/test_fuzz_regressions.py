"""Replay every input the reader fuzzer (``tools/fuzz``, ``make fuzz``) ever flagged, and run a short
deterministic fuzz session so the harness itself stays working.

A file ``<format>-<sha>.bin`` in ``fuzz_regressions/`` once made a reader raise a foreign exception,
hang, exhaust memory or report an offset outside the file; each must now give a Trace or a
TraceError (offsets inside the file) under every ``on_corrupt`` mode.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REGRESSIONS = Path(__file__).parent / "fuzz_regressions"
FILES = sorted(REGRESSIONS.glob("*.bin"))


def _harness():
    spec = importlib.util.spec_from_file_location("fuzz_readers",
                                                  ROOT / "tools" / "fuzz" / "fuzz_readers.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fuzz_readers", mod)
    spec.loader.exec_module(mod)
    return mod


def test_regression_files_exist() -> None:
    assert FILES, "tests/trace_parsers/fuzz_regressions/ holds the fuzzer's findings"


@pytest.mark.parametrize("path", FILES, ids=[f.name for f in FILES])
@pytest.mark.parametrize("mode", ["raise", "skip", "warn"])
def test_fuzz_regression(path: Path, mode: str, tmp_path: Path) -> None:
    fz = _harness()
    data = path.read_bytes()
    name = "digital_0.bin" if path.name.startswith("saleae_binary") else path.stem
    target = tmp_path / name
    target.write_bytes(data)
    assert fz.check_one(target, len(data), mode) is None


def test_harness_smoke(tmp_path: Path) -> None:
    """A few hundred synthetic-seed mutations: the harness runs and the readers hold."""
    fz = _harness()
    out = tmp_path / "fuzz"
    args = fz.argparse.Namespace(seconds=0, inputs=210, formats=None, seed=7, isolate=False, timeout=20.0,
                                 memory=0, max_seed_bytes=0, no_corpus=True, out=str(out),
                                 save_regressions=None, progress=0, replay=None)
    summary = fz.fuzz(args)
    assert summary["inputs"] == 210
    assert set(summary["per_format"]) == set(fz.FORMATS)
    assert all(s["inputs"] == 30 for s in summary["per_format"].values())
    assert summary["findings"] == {}, summary["findings"]


def test_child_mode_reports_hangs_and_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--isolate``: a reader that hangs is killed, one that exhausts memory is reported, a crash
    of the child itself is reported; the fuzzing process survives all three."""
    import os
    import time

    fz = _harness()
    target = tmp_path / "x"
    monkeypatch.setattr(fz, "check_one", lambda *a: time.sleep(30))
    assert fz.run_isolated(target, b"x", "raise", 0.5, 0)[0] == "hang"
    monkeypatch.setattr(fz, "check_one", lambda *a: bytearray(1 << 30))
    assert fz.run_isolated(target, b"x", "raise", 20.0, 256 << 20)[0] == "memory"
    monkeypatch.setattr(fz, "check_one", lambda *a: os.abort())
    assert fz.run_isolated(target, b"x", "raise", 20.0, 0)[0].startswith("signal")
    monkeypatch.setattr(fz, "check_one", lambda *a: None)
    assert fz.run_isolated(target, b"x", "raise", 20.0, 0) is None
