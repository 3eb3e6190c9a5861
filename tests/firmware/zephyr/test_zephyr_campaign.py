"""The Zephyr runs of captures/campaign.toml: the comparison set (every app with SystemView, CTF, MPU,
untraced and MPU-untraced variants), each recorded under captures/ by the campaign (run.json of the image
the run asks for), and ``capture.py campaign --only zephyr`` selects exactly them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "firmware" / "tools"))
import capture as cap_mod  # noqa: E402

RUNS = cap_mod.load_campaign()
ZEPHYR = [(s, rid) for s, rid in RUNS if s.rtos == "zephyr"]
EXPECTED = {
    "ctx_switch-n2", "ctx_switch-n5", "ctx_switch-n10", "ctx_switch-n2-ctf", "ctx_switch-n2-mpu",
    "ctx_switch-n2-untraced", "ctx_switch-n2-mpu-untraced", "periodic", "periodic-load", "isr_latency",
    "isr_latency-ctf", "isr_latency-mpu", "isr_latency-untraced", "isr_latency-mpu-untraced", "fft_workload",
    "calib", "ctx_switch-n5-ctf", "ctx_switch-n10-ctf", "periodic-ctf", "periodic-load-ctf", "calib-ctf",
    "fft_workload-f1-ctf",
}
# Thread-Metric (docs/thread-metric.md, "Zephyr"): every test traced, untraced and untraced with the MPU stack
# guard; cooperative and preemptive also traced with the guard and with time slicing on, traced and untraced
TM_TESTS = ("basic", "cooperative", "preemptive", "interrupt", "interrupt_preemption", "message",
            "synchronization", "memory")
EXPECTED |= {f"tm_{t}{v}" for t in TM_TESTS for v in ("", "-untraced", "-mpu-untraced")}
EXPECTED |= {f"tm_{t}{v}" for t in ("cooperative", "preemptive") for v in ("-mpu", "-timeslice",
                                                                          "-timeslice-untraced")}


# the fine-grained tests (docs/benchmarks.md), at board speed: traced and untraced (f-untraced left out: the
# virtual analyzer misreads its pin stores)
FINE = {f"finegrained-{t}{v}" for t in "abcdefgh" for v in ("", "-untraced")} - {"finegrained-f-untraced"}


# at board speed too (shift 3, la100 and la24, the same image), as the FreeRTOS and ThreadX runs: the
# SystemView runs of the four tests and calib; the CTF, MPU and untraced variants are shift-0 instruction
# counts
BOARD = {"calib", "ctx_switch-n2", "ctx_switch-n5", "ctx_switch-n10", "periodic", "periodic-load",
         "isr_latency", "fft_workload"}


# RTOSBench (docs/benchmarks.md, "RTOSBench"; tests/firmware/test_rtosbench.py): every test traced and
# untraced at board speed only, and jitter at 1 ns/instruction only
RB_BOARD = {f"rtosbench-{t}{v}" for t in ("round_robin", "interrupt_processing", "mutex", "mq", "sem")
            for v in ("", "-untraced")}
RB = RB_BOARD | {"rtosbench-jitter"}


def test_campaign_has_the_zephyr_comparison_set():
    assert {s.app_dir for s, _ in ZEPHYR} == EXPECTED | FINE | RB
    assert len(ZEPHYR) == len(EXPECTED | FINE | RB) + len(BOARD), "a Zephyr run is repeated or missing"
    ref = {s.app_dir: s for s, rid in ZEPHYR if rid == "ref"}
    board = {s.app_dir: s for s, rid in ZEPHYR if rid == "board" and s.app_dir not in FINE | RB_BOARD}
    assert set(board) == BOARD and set(ref) == (EXPECTED | RB) - RB_BOARD
    for name, s in board.items():
        assert s.shift == 3 and [p.name for p in s.profiles] == ["la100", "la24"], name
        assert s.options == ref[name].options, name
    for s, rid in ZEPHYR:
        if s.app_dir in FINE | RB_BOARD:
            assert (rid, s.shift) == ("board", 3), s.app_dir
            continue
        assert (rid, s.shift) == (("board", 3) if rid == "board" else ("ref", 0)), s.app_dir
        trace = s.options.get("CT_ZEPHYR_TRACE", "sysview")
        assert ("-ctf" in s.app_dir or s.app_dir.endswith("ctf")) == (trace == "ctf"), s.app_dir
        assert ("mpu" in s.app_dir) == (s.options.get("CT_ZEPHYR_MPU") == "1"), s.app_dir
        assert ("untraced" in s.app_dir) == (s.options.get("CT_TRACE") == "0"), s.app_dir
        assert ("timeslice" in s.app_dir) == (s.options.get("CT_ZEPHYR_TIMESLICING") == "1"), s.app_dir


def test_thread_metric_runs_differ_from_their_pair_only_in_the_variant():
    """A Zephyr Thread-Metric variant changes only what its name says (trace, guard, time slicing) and the
    run length the size budget sets (captures/campaign.toml): its ratios to the plain run are the effect."""
    tm = {s.app_dir: s for s, _ in ZEPHYR if s.app.startswith("tm_")}
    assert len(tm) == 8 * 3 + 2 * 3
    varied = {"CT_TRACE", "CT_ZEPHYR_MPU", "CT_ZEPHYR_TIMESLICING", "CT_TM_PERIOD_MS"}
    for name, s in tm.items():
        plain = tm[s.app]
        assert {k: v for k, v in s.options.items() if k not in varied} == \
               {k: v for k, v in plain.options.items() if k not in varied}, name
        traced = s.options.get("CT_TRACE", "1") != "0"
        assert s.options["CT_TM_PERIOD_MS"] == ("2" if traced else "5"), name
        assert [p.name for p in s.profiles] == (["ideal", "la100"] if traced else ["ideal"]), name


def test_only_selects_a_whole_rtos_or_one_folder():
    assert cap_mod.select_runs(RUNS, ["zephyr"]) == ZEPHYR
    one = cap_mod.select_runs(RUNS, ["zephyr/isr_latency-ctf"])
    assert [s.app_dir for s, _ in one] == ["isr_latency-ctf"]
    assert cap_mod.select_runs(RUNS, ["zephyr/isr_latency-ctf/board"]) == []
    assert cap_mod.select_runs(RUNS, ["zeph"]) == []
    assert {s.rtos for s, _ in cap_mod.select_runs(RUNS, ["threadx", "zephyr"])} == {"threadx", "zephyr"}


@pytest.mark.parametrize("spec,rid", ZEPHYR, ids=[s.app_dir for s, _ in ZEPHYR])
def test_zephyr_run_is_recorded(spec, rid):
    d = ROOT / "captures" / cap_mod.BOARD / "zephyr" / spec.app_dir / rid
    meta = json.loads((d / "run.json").read_text())
    assert meta["status"] == "ok" and meta["rtos"] == "zephyr"
    assert meta["firmware"]["git_rev"].startswith("src-"), meta["firmware"]["git_rev"]
    for k, v in spec.options.items():
        assert str(meta["options"][k]) == v, k
    traced = spec.options.get("CT_TRACE", "1") != "0"
    assert (meta["trace"] is not None) == traced
    if traced:
        fmt = "ctf" if spec.options.get("CT_ZEPHYR_TRACE") == "ctf" else "systemview"
        assert meta["trace"]["format"] == fmt and meta["trace"]["dropped"] == 0
        if fmt == "ctf":
            assert (d / "metadata").is_file()
            # the RAM buffer's size is an option of the image (CT_ZEPHYR_CTF_BUFFER, default 64 KiB), recorded
            # and printed by the firmware; the run's records all fit in it
            size = int(spec.options.get("CT_ZEPHYR_CTF_BUFFER", 65536))
            assert meta["options"]["CT_ZEPHYR_CTF_BUFFER"] == size
            assert f"CT_INFO trace.buffer_bytes={size}" in meta["result_lines"]
            assert meta["trace"]["bytes"] <= size
        else:
            assert "CT_ZEPHYR_CTF_BUFFER" not in meta["options"]


def test_fft_workload_runs_with_ctf_in_a_larger_buffer():
    """fft_workload's records overflow the default 64 KiB CTF buffer (one frame is ~78 KB): its CTF run sizes
    the buffer with CT_ZEPHYR_CTF_BUFFER and loses nothing."""
    (spec,) = [s for s, _ in ZEPHYR if s.app == "fft_workload" and s.options.get("CT_ZEPHYR_TRACE") == "ctf"]
    assert int(spec.options["CT_ZEPHYR_CTF_BUFFER"]) > 65536
    d = ROOT / "captures" / cap_mod.BOARD / "zephyr" / spec.app_dir / "ref"
    meta = json.loads((d / "run.json").read_text())
    assert 65536 < meta["trace"]["bytes"] <= int(spec.options["CT_ZEPHYR_CTF_BUFFER"])
    assert meta["trace"]["dropped"] == 0 and meta["done"] == {"ok": 1, "fail": 0}
