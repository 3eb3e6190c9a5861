"""`crosstrace analyze` reading recordings in chunks gives the outputs of the whole read (issue 18).

Every output of a capture (result.json, metrics, instances, cross-validation, alignment, pairs,
drop log) is compared between the whole read and chunked reads whose borders fall between any two
events (chunks of 1, 3, 7 events), on committed captures (trace + logic, cross-validated) and on
corpus recordings analyzed on their own. The fault-injection tests drop a chunk or a piece of
carried state and see the comparison fail.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from analyzers.campaign import capture as cap
from analyzers.campaign import chunked
from analyzers.campaign.capture import analyze_capture
from tests.conftest import CAPTURES, corpus_dir

Q = CAPTURES / "qemu_netduinoplus2"
#: captures: a SystemView trace with logic captures (ISR sites, declared edge counts, kernel
#: timing), a Zephyr one (switch-outs), a TraceX trace (read whole) with a sigrok capture (chunked)
CAPTURE_DIRS = ("freertos/isr_latency/ref", "zephyr/ctx_switch-n2/ref", "threadx/fft_workload-f2/ref")
#: corpus recordings analyzed as captures of their own: ISRs, two cores in one file, an STM32F7
CORPUS_FILES = ("harinair_stm32f411_freertos_idlehook_raw.SVdat",
                "espidf_esp32_heaplog_mcore_espext_2024.svdat", "gutya_stm32f746_freertos_raw.SVdat")
#: run-dependent fields of result.json, and the options (``chunk_events`` is one: the cache key and the
#: recorded options differ by design, the results must not)
VOLATILE = ("seconds", "cached", "input_hash", "options")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _tables(dest: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    files = sorted(p for p in dest.glob("*.parquet") if not p.name.startswith("events-"))
    return {p.name: pq.read_table(p) for p in files}


def outputs(folder: Path, out: Path, chunk_events: int | None, on_corrupt: str = "raise") -> dict[str, Any]:
    """What ``analyze`` leaves for ``folder``: result.json (without run-dependent fields) and every
    table but the decoded events files."""
    cid = folder.name
    r = analyze_capture(folder, cid, out, force=True, on_corrupt=on_corrupt, chunk_events=chunk_events)
    assert r["status"] == "ok", r.get("error")
    dest = out / "captures" / cid
    res = json.loads((dest / "result.json").read_text())
    for k in VOLATILE:
        res.pop(k, None)
    return {"result": res, "tables": _tables(dest)}


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Where two ``outputs`` differ (empty: the same)."""
    out = [f"result.json[{k!r}]" for k in sorted(set(a["result"]) | set(b["result"]))
           if not _same(a["result"].get(k), b["result"].get(k))]
    if a["tables"].keys() != b["tables"].keys():
        return [*out, f"tables {sorted(a['tables'])} != {sorted(b['tables'])}"]
    for name, ta in a["tables"].items():
        tb = b["tables"][name]
        if ta.schema != tb.schema or not _same(ta.to_pylist(), tb.to_pylist()):
            out.append(name)
    return out


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The whole read's outputs of every capture and corpus recording (computed once)."""
    out = tmp_path_factory.mktemp("whole")
    with pytest.MonkeyPatch.context() as mp:
        _never_chunked(mp)
        got = {d: outputs(Q / d, out / d.replace("/", "_"), None) for d in CAPTURE_DIRS}
        for f in CORPUS_FILES:
            got[f] = outputs(corpus_dir("systemview") / f, out / f, None, "skip")
    return got


def _never_chunked(mp: pytest.MonkeyPatch) -> None:
    """Without ``chunk_events``, every recording is read whole (the reference of the comparison)."""
    mp.setattr(chunked, "ANALYZE_CHUNK_BYTES", 1 << 62)
    mp.setattr(chunked, "ANALYZE_CHUNK_SAMPLE_BYTES", 1 << 62)


def _source(key: str) -> tuple[Path, str]:
    if key in CAPTURE_DIRS:
        return Q / key, "raise"
    return corpus_dir("systemview") / key, "skip"


@pytest.mark.parametrize("size", [pytest.param(1, marks=pytest.mark.slow), 3, 7])
@pytest.mark.parametrize("key", CAPTURE_DIRS + CORPUS_FILES)
def test_chunked_analyze_equals_the_whole_read(whole: dict[str, Any], tmp_path: Path, key: str,
                                               size: int) -> None:
    folder, on_corrupt = _source(key)
    got = outputs(folder, tmp_path, size, on_corrupt)
    assert differences(whole[key], got) == []
    # it really went the chunked way: no whole events file of a bounded recording was written
    written = {p.name for p in (tmp_path / "captures" / folder.name).glob("events-*")}
    assert written == ({"events-trace.ctev.parquet"} if key.startswith("threadx") else set())


def test_small_recordings_are_read_whole_by_default(tmp_path: Path) -> None:
    src = {"file": Q / CAPTURE_DIRS[0] / "trace.SVDat", "samplerate": None}
    assert chunked.chunk_size(src) is None  # far below ANALYZE_CHUNK_BYTES
    assert chunked.chunk_size(src, 5) == 5
    assert chunked.chunk_size({"file": Q / CAPTURE_DIRS[2] / "trace.trx"}, 5) is None  # no chunk reader


def test_large_recordings_go_chunked_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    src = {"file": Q / CAPTURE_DIRS[0] / "trace.SVDat", "samplerate": None}
    monkeypatch.setattr(chunked, "ANALYZE_CHUNK_BYTES", 1)
    assert chunked.chunk_size(src) == chunked.ANALYZE_CHUNK_EVENTS


def test_a_sigrok_session_is_sized_by_its_samples() -> None:
    long = Q / "freertos" / "isr_latency-long" / "ref" / "logic.sr"  # 3 MB holding 2.9 GB of samples
    short = Q / CAPTURE_DIRS[0] / "logic.sr"  # 0.2 GB of samples
    assert long.stat().st_size < chunked.ANALYZE_CHUNK_BYTES < chunked.sample_bytes(long)
    assert chunked.chunk_size({"file": long}) == chunked.ANALYZE_CHUNK_EVENTS
    assert chunked.chunk_size({"file": short}) is None


# -- fault injection: the comparison must catch a lost chunk or a lost carry ------------------------

def _lose_second_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    import trace_parsers.chunked as tc

    real = tc.iter_trace_chunks

    def lossy(*a: Any, **kw: Any) -> Iterator[Any]:
        for i, ch in enumerate(real(*a, **kw)):
            if i != 1:
                yield ch

    monkeypatch.setattr(tc, "iter_trace_chunks", lossy)


def _forget_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    real = chunked.Gatherer.feed

    def feed(self: chunked.Gatherer, chunk: Any) -> None:
        self.edges = self.edges[:0]  # the edge counts are not carried across chunk borders
        real(self, chunk)

    monkeypatch.setattr(chunked.Gatherer, "feed", feed)


def _forget_kernel_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    real = chunked.Gatherer.feed

    def feed(self: chunked.Gatherer, chunk: Any) -> None:
        self.rows.clear()  # only the last chunk's gathered rows are kept
        real(self, chunk)

    monkeypatch.setattr(chunked.Gatherer, "feed", feed)


def _forget_site_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    keep = cap.site_based_rows
    monkeypatch.setattr(cap, "site_based_rows", lambda t: keep(t).slice(0, 0))


@pytest.mark.parametrize("fault", [_lose_second_chunk, _forget_edges, _forget_kernel_rows, _forget_site_rows])
def test_a_lost_chunk_or_carry_is_caught(whole: dict[str, Any], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch, fault: Any) -> None:
    key = CAPTURE_DIRS[0]
    fault(monkeypatch)
    got = outputs(Q / key, tmp_path, 7)
    assert differences(whole[key], got) != []


def test_the_capture_exercises_what_the_faults_break(whole: dict[str, Any]) -> None:
    """The faults above can only show if the capture has what they break: declared edge counts,
    kernel-timing rows, site-based instances cross-validated."""
    res = whole[CAPTURE_DIRS[0]]["result"]
    run = json.loads((Q / CAPTURE_DIRS[0] / "run.json").read_text())
    assert any(e.get("edges") for e in run["logic"])
    assert res["kernel_timing"] and res["crossval"]


def test_differences_sees_a_changed_value(whole: dict[str, Any]) -> None:
    import pyarrow as pa

    a = whole[CAPTURE_DIRS[0]]
    t = a["tables"]["instances.parquet"]
    i = t.schema.get_field_index("value")
    v = t.column("value").to_pylist()
    v[-1] += 1.0
    b = {"result": a["result"], "tables": {**a["tables"], "instances.parquet": t.set_column(
        i, t.schema.field(i), pa.array(v, pa.float64()))}}
    assert differences(a, b) == ["instances.parquet"]


def _reference_captures() -> list[Any]:
    """A sample of the committed captures: per RTOS and kind of trace file (SystemView, TraceX, CTF,
    none) the largest folder up to 1.5 MB. Every analyzer's chunking is a Hypothesis property
    (test_chunking_property.py) and is checked at every event border of real recordings
    (test_stream_analysis.py); this runs the campaign driver whole and in chunks on real captures of
    each kind (all 194 captures, twice each, took minutes of CI; the longest alone passed the 120 s
    timeout on the loaded CI machine)."""
    from analyzers.campaign.discover import discover

    if not CAPTURES.is_dir():
        return [pytest.param(None, None, marks=pytest.mark.skip(reason="no captures/"))]
    best: dict[tuple[str, tuple[str, ...]], tuple[int, str, Path]] = {}
    for cid, d in discover([CAPTURES]):
        if d.name.endswith(".failed"):
            continue
        files = [p for p in d.iterdir() if p.is_file()]
        kind = tuple(sorted({p.suffix.lower() for p in files} & {".svdat", ".trx", ".ctf"}))
        size = sum(p.stat().st_size for p in files)
        key = (cid.split("/")[1], kind)
        if size <= 1_500_000 and size > best.get(key, (-1, "", d))[0]:  # the richest that stays quick
            best[key] = (size, cid, d)
    return [pytest.param(cid, d, id=cid) for _, cid, d in sorted(best.values(), key=lambda b: b[1])]


@pytest.mark.slow
@pytest.mark.parametrize(("cid", "folder"), _reference_captures())
def test_every_reference_capture_in_chunks(tmp_path: Path, cid: str, folder: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Every committed capture, whole and in chunks of 257 events (borders land anywhere)."""
    _never_chunked(monkeypatch)
    a = analyze_capture(folder, cid, tmp_path / "whole", force=True)
    b = analyze_capture(folder, cid, tmp_path / "chunked", force=True, chunk_events=257)
    assert a["status"] == b["status"] == "ok", (a.get("error"), b.get("error"))
    for r in (a, b):
        for k in VOLATILE:
            r.pop(k, None)
    out = {k: {"result": r, "tables": _tables(tmp_path / k / "captures" / cid)}
           for k, r in (("whole", a), ("chunked", b))}
    assert differences(out["whole"], out["chunked"]) == []


def test_the_scheduler_plans_no_decode_task_for_a_chunked_recording(tmp_path: Path) -> None:
    from analyzers.campaign.scheduler import _plan_tasks
    from analyzers.options import AnalysisOptions

    jobs = [("a", Q / CAPTURE_DIRS[0])]
    whole = _plan_tasks(jobs, tmp_path, False, AnalysisOptions(), workers=1)
    assert sorted(t["key"] for t in whole if t["key"].startswith("decode:")) == [
        "decode:a:logic-ideal", "decode:a:logic-la100", "decode:a:trace"]
    tasks = _plan_tasks(jobs, tmp_path, False, AnalysisOptions(chunk_events=7), workers=1)
    assert [t["key"] for t in tasks] == ["analyze:a"]
    assert tasks[0]["kwargs"]["options"].chunk_events == 7 and tasks[0]["deps"] == []


def test_analyze_dirs_passes_chunk_events_to_the_pool(tmp_path: Path) -> None:
    """The process pool (two workers, two captures) gives the serial whole read's tables."""
    import shutil

    from analyzers.campaign.scheduler import analyze_dirs

    root = tmp_path / "in"
    for d in CAPTURE_DIRS[:2]:
        shutil.copytree(Q / d, root / d.split("/")[1])
    with pytest.MonkeyPatch.context() as mp:
        _never_chunked(mp)
        a = analyze_dirs([root], tmp_path / "a", workers=1, scheduler="serial", quiet=True)
    b = analyze_dirs([root], tmp_path / "b", workers=2, quiet=True, chunk_events=7)
    assert [c["status"] for c in a["captures"] + b["captures"]] == ["ok"] * 4
    for cid in (c["capture"] for c in a["captures"]):
        assert not list((tmp_path / "b" / "captures" / cid).glob("events-*"))
        wa = _tables(tmp_path / "a" / "captures" / cid)
        wb = _tables(tmp_path / "b" / "captures" / cid)
        assert differences({"result": {}, "tables": wa}, {"result": {}, "tables": wb}) == []
