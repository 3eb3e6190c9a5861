"""Differential test: every event of every CTF trace equals babeltrace2's reading of it.

Compared per stream file, in order: event name, id, default-clock value (wrap-unrolled cycles),
payload, event context, stream event context and packet ``cpu_id``. Traces: the three synthetic
layouts (tests/data/ctf/tsdl), the recorded Zephyr 4.3 stream (tests/data/ctf) and every CTF
trace under captures/ (a folder with ``metadata``, or ``*.ctf`` / ``channel*`` streams read with
Zephyr's metadata from ``$CT_DEPS_DIR``). With ``CI=true`` a missing babeltrace2 fails.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import CAPTURES, IN_CI
from trace_parsers.ctf import read_ctf, read_raw
from trace_parsers.model import EventKind, validate

from . import builders as B
from .helpers import DATA, assert_equal_to_bt2, bt2_events, make_trace, need_bt2, ours

RECORDED = sorted(p for p in DATA.glob("zephyr_*") if p.is_dir())


def zephyr_metadata() -> Path:
    """Zephyr 4.3's TSDL metadata from the extracted deps (never stored in the repository)."""
    d = os.environ.get("CT_DEPS_DIR")
    p = Path(d) / "zephyrproject/zephyr/subsys/tracing/ctf/tsdl/metadata" if d else None
    if p is None or not p.is_file():
        msg = ("Zephyr's CTF metadata not found: set CT_DEPS_DIR to a folder extracted by "
               "../shared/deps/extract.sh")
        if IN_CI:
            pytest.fail(msg + " — required in CI", pytrace=False)
        pytest.skip(msg)
    return p


def with_metadata(tmp: Path, streams: list[Path], metadata: Path) -> Path:
    """A trace folder for babeltrace2: the streams plus the metadata."""
    d = tmp / "trace"
    d.mkdir(parents=True)
    shutil.copy(metadata, d / "metadata")
    for s in streams:
        shutil.copy(s, d / s.name)
    return d


def capture_traces() -> list[Path]:
    """CTF traces recorded into captures/: folders with a TSDL ``metadata``, or stream files."""
    if not CAPTURES.is_dir():
        return []
    # a capture folder holds other files too: its stream (*.ctf) is read with the metadata beside it
    found = {p for p in CAPTURES.rglob("*.ctf") if p.is_file()}
    found |= {m.parent for m in CAPTURES.rglob("metadata") if m.is_file() and not any(m.parent.glob("*.ctf"))}
    found |= {p for p in CAPTURES.rglob("channel*_*") if p.is_file() and p.parent not in found}
    return sorted(found)


SYNTHETIC = {
    "zephyr_old": ("zephyr_old.tsdl", lambda: {"channel0_0": B.zephyr_old_stream()[0]}),
    "percpu": ("percpu.tsdl", B.percpu_streams),
    "features": ("features.tsdl", lambda: {"stream0": B.features_stream()}),
}


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_synthetic_equals_babeltrace2(name: str, tmp_path: Path) -> None:
    tsdl, streams = SYNTHETIC[name]
    d = make_trace(tmp_path, tsdl, streams())
    n = assert_equal_to_bt2(d, read_raw(d))
    assert n == sum(1 for _ in bt2_events(d)) > 0


@pytest.mark.parametrize("rec", RECORDED, ids=[p.name for p in RECORDED])
def test_recorded_zephyr_equals_babeltrace2(rec: Path, tmp_path: Path) -> None:
    d = with_metadata(tmp_path, sorted(rec.glob("channel*")), zephyr_metadata())
    raw = read_raw(d)
    assert not raw.diagnostics
    assert assert_equal_to_bt2(d, raw) == len(raw.records) > 400
    # the model rows are the records: same clock values and offsets, sorted by time
    tr = read_ctf(d)
    assert validate(tr) == []
    got = sorted(zip(tr.events["src_offset"].tolist(), tr.events["ts_raw"].tolist()))
    assert got == sorted((r.offset, r.ts) for r in raw.records)


def test_recorded_stream_with_metadata_elsewhere(tmp_path: Path) -> None:
    """A RAM dump read with metadata= equals the same stream in a trace folder."""
    meta = zephyr_metadata()
    for rec in RECORDED:
        stream = rec / "channel0_0"
        a = read_ctf(stream, metadata=meta)
        b = read_ctf(with_metadata(tmp_path / rec.name, [stream], meta))
        assert np.array_equal(a.events, b.events)
        assert [t.name for t in a.tasks] == ["thread_a", "main", "thread_b", "idle"]


@pytest.mark.parametrize("trace", capture_traces(), ids=lambda p: str(p.relative_to(CAPTURES)))
def test_captures_equal_babeltrace2(trace: Path, tmp_path: Path) -> None:
    need_bt2()
    if trace.is_dir():
        d = trace
    else:
        meta = trace.parent / "metadata"
        d = with_metadata(tmp_path, [trace], meta if meta.is_file() else zephyr_metadata())
    raw = read_raw(d)
    assert assert_equal_to_bt2(d, raw) == len([r for r in raw.records if r.eid >= 0])


def test_comparison_detects_a_difference(tmp_path: Path) -> None:
    """The differential check fails when one decoded value differs (fault injection)."""
    d = make_trace(tmp_path, "zephyr_old.tsdl", {"channel0_0": B.zephyr_old_stream()[0]})
    raw = read_raw(d)
    raw.records[5].fields["timeout"] += 1
    with pytest.raises(AssertionError, match="event 5"):
        assert_equal_to_bt2(d, raw)
    raw = read_raw(d)
    raw.records[3].ts += 1
    with pytest.raises(AssertionError, match="event 3"):
        assert_equal_to_bt2(d, raw)
    raw = read_raw(d)
    del raw.records[-1]
    with pytest.raises(AssertionError, match="20 events"):
        assert_equal_to_bt2(d, raw)


def test_ours_leaves_out_lost_markers(tmp_path: Path) -> None:
    d = make_trace(tmp_path, "percpu.tsdl", B.percpu_streams())
    raw = read_raw(d)
    assert any(r.eid < 0 for r in raw.records)
    assert len(ours(raw)) == sum(1 for r in raw.records if r.eid >= 0)
    tr = read_ctf(d)
    assert int((tr.events["kind"] == EventKind.OVERFLOW).sum()) == 1
