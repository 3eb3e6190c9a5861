"""`crosstrace events` never imports pandas (~47 MB of its peak for nothing), and its files keep the
bytes the export wrote when its schema metadata came from the whole-trace ``with_names``.

Each import check is a fresh interpreter running ``events`` on a corpus file and listing the modules
loaded at exit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from analyzers.stream import events as sev
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


def _old_with_names(trace: Any, table: Any) -> Any:
    """``analyzers.export.events_table.with_names`` as it was when ``crosstrace events`` took its
    metadata from it (per-row names built with ``pa.array`` on lists, which imports pandas): the
    golden the export's bytes are compared with."""
    import pyarrow as pa

    from trace_parsers.model import CtxType

    tasks = {t.ctx_id: t.name for t in trace.tasks}
    isrs = {i.number: i.name for i in trace.isrs}
    ev = trace.events
    ct, cid, tgt = ev["ctx_type"].tolist(), ev["ctx_id"].tolist(), ev["target_id"].tolist()

    def ctx_name(t: int, c: int) -> str | None:
        if t == CtxType.TASK:
            return tasks.get(c)
        if t == CtxType.ISR:
            return isrs.get(c)
        return "idle" if t == CtxType.IDLE else None

    table = table.append_column("ctx_name", pa.array([ctx_name(t, c) for t, c in zip(ct, cid)], pa.string()))
    table = table.append_column("target_name", pa.array([tasks.get(t) for t in tgt], pa.string()))
    m = trace.meta
    meta = {
        "source_format": m.source_format, "source_kind": m.source_kind, "tick_hz": m.tick_hz,
        "ts_unit": m.ts_unit, "rtos": m.rtos,
        "cores": m.cores, "tasks": [{"ctx_id": t.ctx_id, "name": t.name, "priority": t.priority}
                                    for t in trace.tasks],
        "isrs": [{"number": i.number, "name": i.name} for i in trace.isrs],
        "markers": [{"id": k.id, "name": k.name} for k in trace.markers],
    }
    old = table.schema.metadata or {}
    text = json.dumps(meta, default=lambda o: o.item() if hasattr(o, "item") else str(o))
    return table.replace_schema_metadata({**old, b"crosstrace": text})


def _old_metadata(trace: Any) -> str:
    import numpy as np

    empty = trace.select(np.zeros(len(trace), dtype=bool))
    return _old_with_names(empty, empty.to_arrow()).schema.metadata[b"crosstrace"].decode()


ALL_FILES = (*FILES, ("systemview", "espidf_esp32_heaplog_mcore_espext_2024.svdat"),
             ("tracex", "tracex-sample_demo_netx_tcp.trx"))


@pytest.mark.parametrize("fmt,name", ALL_FILES)
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_same_bytes_as_with_the_old_metadata(tmp_path: Path, fmt: str, name: str, suffix: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = corpus_dir(fmt) / name
    new, old = tmp_path / f"new{suffix}", tmp_path / f"old{suffix}"
    sev.export_events(path, new, {}, chunk_events=700)
    monkeypatch.setattr(sev, "crosstrace_metadata", _old_metadata)
    sev.export_events(path, old, {}, chunk_events=700)
    assert new.read_bytes() == old.read_bytes()


def test_the_byte_comparison_sees_other_metadata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above can fail: metadata differing by one task name gives other bytes."""
    fmt, name = FILES[0]
    path = corpus_dir(fmt) / name
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    sev.export_events(path, a, {}, chunk_events=700)
    monkeypatch.setattr(sev, "crosstrace_metadata",
                        lambda tr: _old_metadata(tr).replace('"name": "', '"name": "x', 1))
    sev.export_events(path, b, {}, chunk_events=700)
    assert a.read_bytes() != b.read_bytes()
