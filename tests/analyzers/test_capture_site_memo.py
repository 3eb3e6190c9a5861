"""A source analyzed in chunks leaves only its own stand-in in the capture's site-occurrence memo
(issue 18): the stand-ins the chunked analyzers seed for themselves (event rows they read: a
trace's LOG and mark rows; and with each, the site occurrences, whose scratch files stay on disk
while an entry holds them) are let go when the analysis ends, not at the capture's end."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from analyzers import sites as _sites
from analyzers.campaign import capture as cap
from tests.conftest import CAPTURES

#: a TraceX trace (read whole) with a sigrok capture (read in chunks)
FOLDER = CAPTURES / "qemu_netduinoplus2" / "threadx" / "fft_workload-f2" / "ref"


def _strangers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The memo entries that are neither a source decoded whole nor a chunked source's stand-in
    (their events' row counts), seen after each source's chunked analysis."""
    mine: set[int] = set()
    seen: list[int] = []
    read, decode = cap._read_chunked, cap._decode_checked

    def chunked(*a: Any, **k: Any) -> Any:
        got = read(*a, **k)
        if got is not None:
            mine.add(id(got.events))
            seen.extend(len(tr.events) for tr, _ in _sites._REUSE.get().values() if id(tr) not in mine)
        return got

    def whole(*a: Any, **k: Any) -> Any:
        tr = decode(*a, **k)
        mine.add(id(tr))
        return tr

    monkeypatch.setattr(cap, "_read_chunked", chunked)
    monkeypatch.setattr(cap, "_decode_checked", whole)
    r = cap.analyze_capture(FOLDER, FOLDER.name, tmp_path, force=True, chunk_events=1000)
    assert r["status"] == "ok", r.get("error")
    logic = [v["events"] for k, v in r["sources"].items() if k.startswith("logic:")]
    assert len(mine) >= 2 and max(logic) > 1000
    return seen


def test_the_chunked_analysis_lets_its_stand_ins_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _strangers(tmp_path, monkeypatch) == []


def test_kept_stand_ins_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the scoped block (a nested one, which keeps everything) the check above fails: the
    logic capture's analysis seeds four stand-ins of its own (context switch and ISR latency, the
    site-only analyzers, workload, user intervals)."""
    @contextmanager
    def keeps_all() -> Any:
        with _sites.reuse_site_events():
            yield lambda tr: None

    monkeypatch.setattr(_sites, "scoped_site_events", keeps_all)
    assert len(_strangers(tmp_path, monkeypatch)) >= 4
