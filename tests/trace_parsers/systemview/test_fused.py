"""The fused Rust pass (systemview/fused.py, the whole read): windows, the provisional parameters
and their check.

The read does not depend on how it is cut: packets cut at every window end and a window smaller
than one packet give the read in one window; streams whose start does not decide the parameters
(second pass) give the read whose start decides them; fault injection shows the checks can fail.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from trace_parsers import _core
from trace_parsers.model import Trace
from trace_parsers.systemview import fused

from ._encoder import Encoder
from .test_fast import _random_stream, differences, outcome

pytestmark = pytest.mark.skipif(not hasattr(_core, "SvFused"),
                                reason="compiled core without SvFused (run `make build`)")

RAM = 0x20000000


def _passes(mp: pytest.MonkeyPatch) -> list[int]:
    """Counts the conversion passes of each read."""
    calls: list[int] = []
    real = fused._pass

    def spy(*a: Any, **k: Any) -> Any:
        calls.append(1)
        return real(*a, **k)

    mp.setattr(fused, "_pass", spy)
    return calls


def _late_stream(*, late_init: bool = False) -> bytes:
    """Task 0x300 is first used, then named, far after the start (and INIT comes late)."""
    enc = Encoder()
    enc.fixed(10, 1)
    if not late_init:
        enc.init(2, 1_000_000, 1_000_000, RAM, 2)
    enc.task_info(3, 0x100, 1, "early")
    t = 10
    for i in range(3000):
        t += 7
        enc.fixed(4, t, 0x100 if i < 2000 else 0x300)  # switch-in
        enc.fixed(2, t + 1, 15)
        enc.fixed(3, t + 2)
    if late_init:
        enc.init(t + 3, 1_000_000, 1_000_000, RAM, 2)
    enc.task_info(t + 4, 0x300, 2, "late")
    enc.fixed(11, t + 5)
    return enc.bytes()


@pytest.mark.parametrize("late_init", [False, True])
def test_parameters_decided_late(late_init: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The start of the stream (PREFIX bytes) misses a task and maybe INIT: converted again."""
    p = tmp_path / "late.SVDat"
    p.write_bytes(_late_stream(late_init=late_init))
    ref = outcome(p)  # PREFIX (1 MB) holds the whole stream: one pass
    monkeypatch.setattr(fused, "PREFIX", 256)
    passes = _passes(monkeypatch)
    got = outcome(p)
    assert differences(ref, got) == []
    assert len(passes) == 2
    assert [t.name for t in got.tasks] == ["early", "late"]


def test_parameters_decided_at_start_one_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "early.SVDat"
    p.write_bytes(_late_stream())
    passes = _passes(monkeypatch)  # PREFIX (1 MB) holds the whole stream
    got = outcome(p)
    assert len(passes) == 1 and isinstance(got, Trace)


def test_parameter_check_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fault injection: if the final parameters were taken as equal to the provisional ones, the
    rows converted with the provisional ones would be kept, and differ."""
    p = tmp_path / "late.SVDat"
    p.write_bytes(_late_stream(late_init=True))
    ref = outcome(p)
    monkeypatch.setattr(fused, "PREFIX", 256)
    monkeypatch.setattr(fused._Params, "__eq__", lambda a, b: True)
    got = outcome(p)
    diff = differences(ref, got)
    assert any(d.startswith("column ts ") for d in diff)
    assert any(d.startswith("column ctx_id") for d in diff)


@pytest.mark.parametrize("window", [1, 7, 64, 4093])
def test_windows_identical(window: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Packets (and strings longer than the window) cut at every window end."""
    p = tmp_path / "w.SVDat"
    p.write_bytes(_random_stream(random.Random(11), n=300))
    ref = outcome(p)
    monkeypatch.setattr(fused, "WINDOW", window)
    got = outcome(p)
    assert differences(ref, got) == []
    assert got.columnar  # held as columns; the row table built from them equals the reference
    assert got.events.tobytes() == ref.events.tobytes()


def test_columns_are_compact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fused read holds narrow, constant and sparse columns, well under the 51-byte row."""
    p = tmp_path / "c.SVDat"
    p.write_bytes(_random_stream(random.Random(5), n=3000))
    got = outcome(p)
    held = got.columns.describe()
    assert held["ts"] == "int64" and held["ts_raw"] == "uint64"
    assert held["core"] == "const 0" and held["value"].startswith("sparse")
    assert got.columns.storage("kind").itemsize == 1
    assert got.columns.nbytes < 36 * len(got)


def test_comparison_detects_a_changed_fused_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fault injection: a fused pass that alters one byte of one row must be caught."""
    p = tmp_path / "f.SVDat"
    p.write_bytes(_random_stream(random.Random(7)))
    ref = outcome(p)
    real = _core.SvFused

    class Broken:
        def __init__(self, *a: Any, **k: Any) -> None:
            self.inner = real(*a, **k)

        def feed(self, *a: Any) -> int:
            return int(self.inner.feed(*a))

        def finish(self) -> Any:
            d = self.inner.finish()
            val = d["columns"]["target_id"]["val"]  # the sixth target_id that is not -1
            if val["kind"] == "const":
                d["columns"]["target_id"]["val"] = {**val, "value": val["value"] ^ 1}
            else:
                val["data"][5 * np.dtype(val["dtype"]).itemsize] ^= 1
            return d

    monkeypatch.setattr(_core, "SvFused", Broken)
    got = outcome(p)
    assert any(d.startswith("column target_id") for d in differences(ref, got))


def test_hash_of_files_read_in_windows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SHA-256 taken from the windows equals the file's, for one file and for a pair."""
    import hashlib

    a, b = tmp_path / "a_cpu0.SVDat", tmp_path / "a_cpu1.SVDat"
    a.write_bytes(_random_stream(random.Random(1)))
    b.write_bytes(_random_stream(random.Random(2)))
    monkeypatch.setattr(fused, "WINDOW", 100)
    one = fused.read_fused([a])
    assert one.meta.source_sha256 == hashlib.sha256(a.read_bytes()).hexdigest()
    two = fused.read_fused([a, b])
    both = hashlib.sha256(a.read_bytes() + b.read_bytes()).hexdigest()
    assert two.meta.source_sha256 == both


@pytest.mark.corpus
def test_overflows_expand_no_column(tmp_path: Path) -> None:
    """Reading a recording with OVERFLOWs (the corpus ESP32 one, repeated to 2 MB as
    ``bench/gaps.py`` does: a fused read) widens or expands no column: the overflow diagnostic
    reads the OVERFLOW rows alone (it expanded ``value`` and widened ``src_offset`` over every
    event: ~40 % of the read on a gap-dense stream)."""
    from bench.gaps import SOURCE, gap_stream
    from tests.conftest import corpus_dir
    from trace_parsers import open_trace

    if not (corpus_dir("systemview") / SOURCE).is_file():
        pytest.skip("corpus recording missing")
    path = tmp_path / "gaps.SVDat"
    gap_stream(path, 2 << 20)
    tr = open_trace(path, on_corrupt="skip")
    assert tr.columnar and any(d.code == "SV_OVERFLOW" and d.count > 34 for d in tr.diagnostics)
    assert not tr.columns._wide, sorted(tr.columns._wide)  # nothing expanded while reading
    assert tr.columns.describe()["value"].startswith("sparse")
