"""`crosstrace analyze`: discovery, parallel analysis, cache, failures, campaign tables."""

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from analyzers import _synth as S
from analyzers.campaign import analyze_dirs, decode, load_campaign, scheduler
from analyzers.campaign.discover import discover
from analyzers.cli import main

from ._campaign import make_campaign


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    root = make_campaign(tmp_path_factory.mktemp("captures"))
    out = root.parent / "out"
    return root, out, analyze_dirs([root], out, workers=1, scheduler="serial", quiet=True)


def test_discovery_finds_run_json_folders(campaign):
    root, _, _ = campaign
    ids = [cid for cid, _ in discover([root])]
    assert len(ids) == 10 and "qemu_netduinoplus2/freertos/ctx_switch/r1" in ids


def test_discovery_keeps_folders_from_several_roots_apart(campaign):
    root, _, _ = campaign
    runs = sorted(d for _, d in discover([root]) if d.name == "r1")[:3]  # same leaf name, other parents
    found = discover(runs)
    assert len(found) == len(runs) == 3
    assert len({cid for cid, _ in found}) == 3
    assert sorted(d for _, d in found) == runs


def test_bad_capture_is_reported_and_the_rest_complete(campaign):
    _, out, man = campaign
    failed = [c for c in man["captures"] if c["status"] != "ok"]
    assert [c["capture"] for c in failed] == ["qemu_netduinoplus2/freertos/broken/r1"]
    assert failed[0]["code"] == "FMT_UNKNOWN" and "trace.SVDat" in failed[0]["error"]
    assert man["failed"] == 1 and len(man["captures"]) == 10


def test_campaign_tables(campaign):
    _, out, _ = campaign
    d = load_campaign(out)
    camp = d["campaign"]
    assert {
        "board",
        "rtos",
        "app",
        "metric",
        "source",
        *("n", "mean", "std", "min", "p1", "p50", "p99", "max"),
    } <= set(camp.columns)
    row = camp[(camp.rtos == "threadx") & (camp.metric == "ctx_switch.yield") & (camp.source == "trace")]
    assert len(row) == 1 and row["n"].iloc[0] == 200
    assert set(camp.source) == {"trace", "logic", "firmware"}
    assert (out / "campaign.csv").is_file() and (out / "campaign.parquet").is_file()
    xv = d["crossval"]
    assert len(xv) >= 8 and set(xv.verdict) == {"PASS"}
    comp = d["comparison"]
    c = comp[(comp.metric == "ctx_switch.yield") & (comp.source == "trace") & (comp.variant == "")]
    c = c.set_index("rtos")
    assert c.loc["freertos", "x_fastest"] == 1.0 and c.loc["threadx", "x_slowest"] == 1.0
    ratio = c.loc["threadx", "mean_ns"] / c.loc["freertos", "mean_ns"]
    assert c.loc["threadx", "x_fastest"] == pytest.approx(ratio) and ratio == pytest.approx(1.6, rel=0.05)
    assert c.loc["freertos", "mean_cycles"] == pytest.approx(c.loc["freertos", "mean_ns"])  # QEMU: 1 insn/ns
    ov = pd.read_csv(out / "overhead.csv")
    o = ov[ov.metric == "ctx_switch.yield"]
    assert len(o) == 1 and o["untraced_ns"].iloc[0] == 1100


def test_per_capture_outputs(campaign):
    _, out, _ = campaign
    d = out / "captures" / "qemu_netduinoplus2" / "freertos" / "isr_latency" / "r1"
    for f in (
        "events-trace.ctev.parquet",
        "events-logic-ideal.ctev.parquet",
        "instances.parquet",
        "metrics.parquet",
        "crossval.parquet",
        "alignment.parquet",
        "pairs.parquet",
        "result.json",
    ):
        assert (d / f).is_file(), f
    res = json.loads((d / "result.json").read_text())
    assert res["verdict"] == "PASS" and res["provenance"]["firmware_rev"] == "synthetic"
    assert res["provenance"]["console_done"] == [1, 0]


def test_rerun_is_cached_and_a_change_invalidates(tmp_path):
    root = make_campaign(tmp_path / "c", broken=False)
    out = tmp_path / "out"
    m1 = analyze_dirs([root], out, scheduler="serial", quiet=True)
    assert not any(c["cached"] for c in m1["captures"])
    m2 = analyze_dirs([root], out, scheduler="serial", quiet=True)
    assert all(c["cached"] for c in m2["captures"])
    sc = S.periodic(jitter_ns=999)
    S.write_capture_folder(
        root / "qemu_netduinoplus2" / "threadx" / "periodic" / "r1",
        sc,
        rtos="threadx",
        trace=S.to_trace(sc),
        capture=S.to_capture(sc),
    )
    m3 = analyze_dirs([root], out, scheduler="serial", quiet=True)
    fresh = [c["capture"] for c in m3["captures"] if not c["cached"]]
    assert fresh == ["qemu_netduinoplus2/threadx/periodic/r1"]


def _campaign_table(out):
    return (
        load_campaign(out)["campaign"]
        .sort_values(["capture", "metric", "source", "profile"])
        .reset_index(drop=True)
    )


def test_process_pool_gives_the_serial_results(campaign, tmp_path):
    root, out, _ = campaign
    out2 = tmp_path / "pool"
    analyze_dirs([root], out2, workers=2, scheduler="processes", quiet=True)
    pd.testing.assert_frame_equal(_campaign_table(out), _campaign_table(out2))


@pytest.mark.slow
def test_local_dask_cluster_gives_identical_results(campaign, tmp_path):
    root, out, _ = campaign
    out2 = tmp_path / "dask"
    analyze_dirs([root], out2, workers=2, scheduler="dask-local", quiet=True)
    pd.testing.assert_frame_equal(_campaign_table(out), _campaign_table(out2))


def test_cli_exit_codes(campaign, tmp_path, capsys):
    root, _, _ = campaign
    assert main(["analyze", str(root), "-o", str(tmp_path / "o"), "--scheduler", "serial", "-q"]) == 1
    assert "1 failed" in capsys.readouterr().out
    ok_root = make_campaign(tmp_path / "ok", broken=False)
    assert main(["analyze", str(ok_root), "-o", str(tmp_path / "o2"), "-j", "1", "-q"]) == 0
    assert main(["analyze", str(tmp_path / "missing"), "-o", str(tmp_path / "o3")]) == 2


def test_folder_without_run_json_is_recognised(tmp_path):
    sc = S.ctx_switch(n=30)
    from analyzers._io import save_trace

    d = tmp_path / "loose"
    d.mkdir()
    save_trace(S.to_trace(sc), d / "trace.ctev.parquet")
    save_trace(S.to_capture(sc), d / "logic.ctev.parquet")
    m = analyze_dirs([tmp_path], tmp_path / "out", scheduler="serial", quiet=True)
    (c,) = m["captures"]
    assert c["status"] == "ok" and c["verdict"] == "PASS" and c["capture"] == "loose"


@pytest.mark.parametrize(
    "run_json, files, code",
    [
        ("{not json", {}, "AN_BAD_RUN_JSON"),
        ('{"schema": 1, "logic": [{"file": "logic.sr"}]}', {}, "IO_ERROR"),
        ('{"schema": 1, "trace": {"file": "t.SVDat"}}', {"t.SVDat": b";\n" + bytes(range(256))}, None),
        ('{"schema": 1}', {}, "AN_NO_RECORDING"),
    ],
)
def test_bad_capture_folders_fail_alone(tmp_path, run_json, files, code):
    d = tmp_path / "c" / "bad"
    d.mkdir(parents=True)
    (d / "run.json").write_text(run_json)
    for name, data in files.items():
        (d / name).write_bytes(data)
    good = S.periodic(n=20)
    S.write_capture_folder(tmp_path / "c" / "good", good, trace=S.to_trace(good), capture=S.to_capture(good))
    m = analyze_dirs([tmp_path / "c"], tmp_path / "out", scheduler="serial", quiet=True)
    res = {c["capture"]: c for c in m["captures"]}
    assert res["good"]["status"] == "ok"
    bad = res["bad"]
    if bad["status"] == "ok":  # a reader may recover (diagnostics) instead of failing
        assert code is None
    else:
        assert bad["error"] and (code is None or bad["code"] == code)


@pytest.mark.slow
def test_scheduler_address_runs_on_an_existing_dask_cluster(campaign, tmp_path):
    from distributed import LocalCluster

    root, out, _ = campaign
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        assert cluster.scheduler_address.startswith("tcp://")
        rc = main(
            ["analyze", str(root), "-o", str(tmp_path / "o"), "--scheduler", cluster.scheduler_address, "-q"]
        )
    assert rc == 1  # the broken capture fails, the rest complete
    a = (
        load_campaign(out)["campaign"]
        .sort_values(["capture", "metric", "source", "profile"])
        .reset_index(drop=True)
    )
    b = load_campaign(tmp_path / "o")["campaign"]
    b = b.sort_values(["capture", "metric", "source", "profile"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)


# -- the task graph (decode every recording in parallel, then analyze each capture) ----------------

#: small reference captures in their recorded formats (.SVDat, .trx, .sr)
_REAL = ("freertos/ctx_switch-n2/ref", "threadx/isr_latency/ref")


@pytest.fixture()
def real_captures(tmp_path):
    import shutil

    from ..conftest import CAPTURES

    root = tmp_path / "caps"
    for rel in _REAL:
        src = CAPTURES / "qemu_netduinoplus2" / rel
        if not src.is_dir():
            pytest.skip(f"{src} is missing")
        shutil.copytree(src, root / rel)
    return root


def test_pool_decodes_every_recording_before_its_capture_is_analyzed(
    real_captures, tmp_path, monkeypatch
):
    monkeypatch.setattr(scheduler, "_SPLIT_SHARE", 0.0)  # split every capture, however small
    serial = analyze_dirs([real_captures], tmp_path / "serial", scheduler="serial", quiet=True)
    pool = analyze_dirs([real_captures], tmp_path / "pool", workers=2, scheduler="processes", quiet=True)
    assert pool["failed"] == serial["failed"] == 0
    pd.testing.assert_frame_equal(_campaign_table(tmp_path / "serial"), _campaign_table(tmp_path / "pool"))
    sched = {t["key"]: t for t in pool["schedule"]}
    for rel in _REAL:
        decodes = [t for k, t in sched.items() if k.startswith("decode:") and rel in k]
        (analysis,) = [t for k, t in sched.items() if k == f"analyze:{rel}"]
        assert len(decodes) == 3  # trace, ideal and la100 logic captures
        assert max(t["ended"] for t in decodes) <= analysis["started"]
    # phase 2 used the decoded events: every events file carries the stamp of its recording
    from analyzers._io import read_stamp

    for p in (tmp_path / "pool" / "captures").rglob("events-*.ctev.parquet"):
        stamp = read_stamp(p)
        assert stamp and stamp["sha256"]
        assert stamp["file"] in {"trace.SVDat", "trace.trx", "logic.sr", "logic-la100.sr"}


def test_decoded_events_are_reused_only_while_the_recording_is_unchanged(
    real_captures, tmp_path, monkeypatch
):
    import analyzers.campaign as B

    folder = real_captures / _REAL[0]
    out = tmp_path / "out"
    first = B.analyze_capture(folder, "c", out)
    assert first["status"] == "ok"
    (out / "captures" / "c" / "result.json").unlink()  # results gone, decoded events kept

    def no_decoding(*a, **k):
        raise AssertionError("decoded again")

    monkeypatch.setattr(decode, "_open", no_decoding)
    again = B.analyze_capture(folder, "c", out)
    assert again["status"] == "ok"
    pd.testing.assert_frame_equal(pd.DataFrame(again["metrics"]), pd.DataFrame(first["metrics"]))
    # --force decodes again
    forced = B.analyze_capture(folder, "c", out, force=True)
    assert forced["status"] == "failed" and "decoded again" in forced["error"]
    # a changed recording is decoded again (here: the same bytes under a new timestamp are reused,
    # one changed byte is not)
    monkeypatch.undo()
    log = folder / "logic-la100.sr"
    data = bytearray(log.read_bytes())
    calls = []
    real_open = decode._open
    monkeypatch.setattr(decode, "_open", lambda p, **k: calls.append(Path(p).name) or real_open(p, **k))
    log.write_bytes(bytes(data))
    B.analyze_capture(folder, "c", out, force=False, reuse_events=True)
    assert calls == []
    data[-30] ^= 0xFF  # inside the zip's central directory: the file no longer reads the same
    log.write_bytes(bytes(data))
    res = B.analyze_capture(folder, "c", out, reuse_events=True, force=True)
    assert res["code"] == "AN_HASH_MISMATCH" and "logic-la100.sr" in res["error"] and calls == []
    run = json.loads((folder / "run.json").read_text())  # as if it had been recorded so
    next(e for e in run["logic"] if e["file"] == log.name)["sha256"] = hashlib.sha256(data).hexdigest()
    (folder / "run.json").write_text(json.dumps(run))
    B.analyze_capture(folder, "c", out, reuse_events=True)
    assert calls == ["logic-la100.sr"]


def test_a_recording_that_fails_to_decode_fails_its_capture_in_the_pool(
    real_captures, tmp_path, monkeypatch
):
    monkeypatch.setattr(scheduler, "_SPLIT_SHARE", 0.0)
    bad = real_captures / _REAL[1] / "trace.trx"
    bad.write_bytes(b"\x00" * 64)
    m = analyze_dirs([real_captures], tmp_path / "out", workers=2, scheduler="processes", quiet=True)
    res = {c["capture"]: c for c in m["captures"]}
    assert res[_REAL[0]]["status"] == "ok"
    assert res[_REAL[1]]["status"] == "failed" and res[_REAL[1]]["error"]


def test_graph_runner_respects_dependencies_slots_and_priorities():
    from concurrent.futures import Future

    from analyzers.campaign.scheduler import _run_graph

    log: list[str] = []
    inflight_max = [0]
    live: set = set()

    def submit(t):
        f: Future = Future()
        f.key = t["key"]  # type: ignore[attr-defined]
        live.add(f)
        inflight_max[0] = max(inflight_max[0], len(live))
        log.append(t["key"])
        return f

    def wait_any(fs):
        f = min(fs, key=lambda f: f.key)  # finish in key order
        f.set_result(f.key)
        live.discard(f)
        return {f}

    tasks = [
        {"key": "a1", "deps": [], "priority": 1},
        {"key": "a2", "deps": [], "priority": 9},
        {"key": "b", "deps": ["a1", "a2"], "priority": 100},
        {"key": "c", "deps": [], "priority": 5},
    ]
    done = []
    _run_graph(tasks, 2, submit, wait_any, lambda t, r: done.append(r))
    assert log[:2] == ["a2", "c"]  # highest priority first, two slots
    assert log.index("b") > log.index("a1") and inflight_max[0] == 2
    assert sorted(done) == ["a1", "a2", "b", "c"]


@pytest.mark.slow
def test_local_dask_cluster_runs_the_task_graph(real_captures, tmp_path, monkeypatch):
    monkeypatch.setattr(scheduler, "_SPLIT_SHARE", 0.0)
    analyze_dirs([real_captures], tmp_path / "serial", scheduler="serial", quiet=True)
    m = analyze_dirs([real_captures], tmp_path / "dask", workers=2, scheduler="dask-local", quiet=True)
    assert m["failed"] == 0 and sum(t["key"].startswith("decode:") for t in m["schedule"]) == 6
    pd.testing.assert_frame_equal(_campaign_table(tmp_path / "serial"), _campaign_table(tmp_path / "dask"))


def test_only_a_capture_too_big_to_balance_is_split(tmp_path):
    from analyzers.campaign.scheduler import _plan_tasks
    from analyzers.options import AnalysisOptions

    big, small = tmp_path / "big", tmp_path / "small"
    for d, n in ((big, 200_000), (small, 1_000)):
        d.mkdir()
        (d / "run.json").write_text(json.dumps({"trace": {"file": "t.SVDat"}, "logic": [{"file": "l.sr"}]}))
        (d / "t.SVDat").write_bytes(b"x" * n)
        (d / "l.sr").write_bytes(b"x" * n)
    jobs = [("big", big), ("small", small)]
    tasks = _plan_tasks(jobs, tmp_path / "out", False, AnalysisOptions(), workers=2)
    keys = [t["key"] for t in tasks]
    assert keys == ["decode:big:trace", "decode:big:logic-ideal", "analyze:big", "analyze:small"]
    analysis = {t["key"]: t for t in tasks}
    assert analysis["analyze:big"]["deps"] == keys[:2] and analysis["analyze:small"]["deps"] == []
    # a decode's priority counts the analysis waiting for it: the big capture's chain goes first
    prio = {k: t["priority"] for k, t in analysis.items()}
    assert min(prio[k] for k in keys[:2]) > prio["analyze:big"] > prio["analyze:small"]


def _exit_on_bad(x: str) -> str:
    """Pool task for the test below: the process dies on "bad" (as on a crash or an OOM kill)."""
    import os

    if x == "bad":
        os._exit(3)
    return x


def test_a_task_that_kills_its_worker_fails_alone_and_the_rest_complete():
    from concurrent.futures import FIRST_COMPLETED, wait

    from analyzers.campaign.scheduler import _ProcessPool, _run_graph

    tasks = [
        {"key": k, "deps": [], "priority": p, "args": (k,)}
        for k, p in (("a", 5), ("bad", 4), ("c", 3), ("d", 2), ("e", 1))
    ]
    tasks.append({"key": "f", "deps": ["bad"], "priority": 0, "args": ("f",)})
    done: dict[str, object] = {}
    pool = _ProcessPool(2)
    try:
        _run_graph(
            tasks,
            2,
            lambda t: pool.submit(_exit_on_bad, *t["args"]),
            lambda fs: wait(fs, return_when=FIRST_COMPLETED).done,
            lambda t, r: done.__setitem__(t["key"], r),
            retries=1,
        )
    finally:
        pool.shutdown()
    assert {k: v for k, v in done.items() if k != "bad"} == {k: k for k in "acdef"}
    assert isinstance(done["bad"], Exception)
    assert pool.restarts >= 2  # the first death, then "bad" once more, alone
