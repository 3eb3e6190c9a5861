"""`crosstrace events` never imports pandas (~47 MB of its peak for nothing). That its files equal
the whole-trace export's, metadata included, is tests/analyzers/test_stream_events.py's.

Each import check is a fresh interpreter running ``events`` on a corpus file and listing the modules
loaded at exit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import corpus_dir

ROOT = Path(__file__).resolve().parents[2]

_PROBE = r"""
import contextlib, io, json, sys
from analyzers.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""

FILES = (("systemview", "harinair_stm32f411_freertos_idlehook_raw.SVdat"),
         ("tracex", "tracex-sample_demo_threadx.trx"), ("logic", "uart_glitches_2mhz.sr"))


def _events(path: Path, out: Path, *extra: str, pre: str = "") -> dict:
    r = subprocess.run([sys.executable, "-c", pre + _PROBE, "events", str(path), "-o", str(out), *extra],
                       capture_output=True, text=True, cwd=ROOT, timeout=120, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def _pandas(modules: list[str]) -> list[str]:
    return [m for m in modules if m == "pandas" or m.startswith("pandas.")]


@pytest.mark.parametrize("fmt,name", FILES)
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_events_does_not_import_pandas(tmp_path: Path, fmt: str, name: str, suffix: str) -> None:
    out = tmp_path / f"e{suffix}"
    r = _events(corpus_dir(fmt) / name, out, "--chunk-events", "500")
    assert r["code"] == 0 and r["out"].startswith("wrote ") and out.stat().st_size > 0
    assert "pyarrow" in r["modules"]  # the probe sees the export's imports
    assert _pandas(r["modules"]) == []


def test_the_probe_sees_pandas(tmp_path: Path) -> None:
    """The check above can fail: a run in which pandas was imported is reported."""
    fmt, name = FILES[0]
    r = _events(corpus_dir(fmt) / name, tmp_path / "e.parquet", pre="import pandas\n")
    assert r["code"] == 0 and "pandas" in _pandas(r["modules"])
