"""capture.py's decisions without QEMU: a fake run writes the console, the edge log and a trace into the
work folder; the folder that results (complete or ``.failed``) and its run.json are checked."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "firmware" / "tools"))
sys.path.insert(0, str(Path(__file__).parent))

import capture as cap_mod  # noqa: E402
from test_vla_host import GPIOG, USART1, make_log  # noqa: E402
from vla.profiles import PROFILES  # noqa: E402

OK_CONSOLE = (
    "\r\nCT_BOOT crosstrace\r\nCT_INFO ts_hz=1000000000\r\n"
    "CT_RESULT ctx_switch.yield n=2 min=5 mean=5.00 max=5 unit=ticks ts_hz=1000000000\r\n"
    "CT_TRACE file=trace.SVDat events=4 bytes=6 dropped={dropped}\r\n{extra}CT_DONE ok=1 fail={fail}\r\n"
)


def fake_run(console: str, stores, trace: bytes | None = b"\x00" * 10 + b"\x01\x02"):
    def run_qemu(elf, work, timeout_s, shift=0):
        (work / "uart.log").write_text(console, newline="")
        make_log(work / "vla.edges", stores)
        if trace is not None:
            (work / "trace.SVDat").write_bytes(trace)
        return 0, 0.01

    return run_qemu


PIN_STORES = [(100, GPIOG + 0x18, 1 << 2, 4), (300, GPIOG + 0x18, 1 << 18, 4), (400, USART1 + 4, 0x43, 1)]


@pytest.fixture
def elf(tmp_path) -> Path:
    p = tmp_path / "fake.elf"
    p.write_bytes(b"not an ELF")
    return p


def spec() -> cap_mod.RunSpec:
    return cap_mod.RunSpec("freertos", "ctx_switch", {"CT_NTASKS": "2"}, "n2", (PROFILES["ideal"],))


def test_ok_run_folder_and_run_json(tmp_path, elf, monkeypatch):
    monkeypatch.setattr(
        cap_mod, "run_qemu", fake_run(OK_CONSOLE.format(dropped=0, extra="", fail=0), PIN_STORES)
    )
    parent = tmp_path / "out" / "qemu_netduinoplus2" / "freertos" / "ctx_switch-n2"
    (parent / "r1.failed").mkdir(parents=True)  # an earlier failed attempt is cleared by a good run
    d = cap_mod.capture(spec(), tmp_path / "out", "r1", elf=elf)
    assert sorted(p.name for p in parent.iterdir()) == ["r1"]
    meta = json.loads((d / "run.json").read_text())
    assert meta["status"] == "ok" and meta["run_id"] == "r1" and meta["variant"] == "n2"
    assert meta["trace"]["tick_hz"] == 1_000_000_000 and meta["trace"]["events"] == 4
    assert meta["trace"]["overflow"] is False and meta["trace"]["dropped"] == 0
    assert (d / "trace.SVDat").read_bytes().startswith(b";\n; Version     SEGGER SystemViewer")
    assert (d / "trace.SVDat").read_bytes().endswith(b"\x00" * 10 + b"\x01\x02")
    assert [s["channel"] for s in meta["sites"] if s["name"] == "ctx.yield"] == ["ctx.yield"]
    assert all(s["channel"] is None for s in meta["sites"] if s["name"] != "ctx.yield")
    assert meta["result_lines"][-1] == "CT_DONE ok=1 fail=0"
    assert meta["logic"][0]["edges"] == {"ctx.yield": 2, "uart.tx": 6}
    assert cap_mod.verify(d) == []


def test_overflow_is_a_failed_capture_that_says_so(tmp_path, elf, monkeypatch):
    console = OK_CONSOLE.format(dropped=7, extra="CT_FAIL trace.overflow dropped=7\r\n", fail=1)
    monkeypatch.setattr(cap_mod, "run_qemu", fake_run(console, PIN_STORES))
    with pytest.raises(cap_mod.CaptureError, match="trace buffer overflowed: 7 trace records were lost"):
        cap_mod.capture(spec(), tmp_path, "r1", elf=elf)
    failed = tmp_path / "qemu_netduinoplus2" / "freertos" / "ctx_switch-n2" / "r1.failed"
    meta = json.loads((failed / "run.json").read_text())
    assert (
        meta["status"] == "failed" and meta["trace"]["overflow"] is True and "overflowed" in meta["failure"]
    )
    assert not (failed.parent / "r1").exists()


def test_firmware_failure_is_reported(tmp_path, elf, monkeypatch):
    console = OK_CONSOLE.format(dropped=0, extra="CT_FAIL ctx_switch.yield ct_task_yield err=-1\r\n", fail=1)
    monkeypatch.setattr(cap_mod, "run_qemu", fake_run(console, PIN_STORES))
    with pytest.raises(cap_mod.CaptureError, match=r"failed run \(CT_DONE ok=1 fail=1\): CT_FAIL ctx_switch"):
        cap_mod.capture(spec(), tmp_path, "r1", elf=elf)


def test_no_pin_edges_is_reported(tmp_path, elf, monkeypatch):
    console = OK_CONSOLE.format(dropped=0, extra="", fail=0)
    monkeypatch.setattr(cap_mod, "run_qemu", fake_run(console, [(400, USART1 + 4, 0x43, 1)]))
    with pytest.raises(cap_mod.CaptureError, match=r"capture has no pin edges \(1 stores logged\)"):
        cap_mod.capture(spec(), tmp_path, "r1", elf=elf)


def test_campaign_file_covers_the_matrix():
    runs = cap_mod.load_campaign()
    have = {(s.rtos, s.app) for s, _ in runs}
    for rtos in ("freertos", "threadx"):
        for app in ("ctx_switch", "periodic", "isr_latency", "fft_workload"):
            assert (rtos, app) in have
        ntasks = {int(s.options["CT_NTASKS"]) for s, _ in runs if (s.rtos, s.app) == (rtos, "ctx_switch")}
        assert {2, 5, 10} <= ntasks
    ref = {(s.rtos, s.app_dir): s for s, rid in runs if rid == "ref"}
    board = {(s.rtos, s.app_dir): s for s, rid in runs if rid == "board"}
    assert len(ref) + len(board) == len(runs)
    for s in ref.values():
        names = [p.name for p in s.profiles]
        if s.app == "rtosbench":  # jitter, la100 only (the rest at board speed): test_rtosbench.py
            continue
        assert names[0] == "ideal" and s.shift == 0
        if str(s.options.get("CT_TRACE", 1)) == "0" and s.app.startswith("tm_"):
            # Thread-Metric's pins-only runs give the rate ratios (docs/thread-metric.md): nothing to
            # cross-validate, one analyzer profile (captures/ stays under its size limit)
            assert names == ["ideal"], (s.rtos, s.app_dir)
            continue
        assert len(names) >= 2
        assert any(p.samplerate == 100_000_000 and p.ppm == 50 for p in s.profiles)
    # the fine-grained tests (issue 34) run at board speed only: traced with ideal + la100, pins-only la100;
    # all eight traced and untraced on FreeRTOS, ThreadX, Zephyr (less one: a VLA defect), and all eight
    # traced and A untraced on µC/OS-III, µC/OS-II and RIOT (issue 35; captures/ budget): test A, the
    # paper's Tables 3 and 4, traced and untraced on every RTOS of the paper
    fine = {k: s for k, s in board.items() if k[1].startswith("finegrained-")}
    assert len(fine) == 3 * 8 * 2 - 1 + 3 * 8 + 3 and not set(fine) & set(ref)
    assert {r for r, d in fine if d == "finegrained-a"} == {"freertos", "threadx", "zephyr", "ucos3", "ucos2",
                                                             "riot"}
    for k, s in fine.items():
        want = ["la100"] if str(s.options.get("CT_TRACE", 1)) == "0" else ["ideal", "la100"]
        assert s.shift == 3 and [p.name for p in s.profiles] == want, k
    # RTOSBench (issue 34) runs at board speed too, but jitter: tests/firmware/test_rtosbench.py
    board = {k: s for k, s in board.items() if k not in fine and not k[1].startswith("rtosbench-")}
    # board speed (issue 12): the same runs as the reference campaign of the four tests and calib (not the
    # negative controls, nor the runs marked rerun = false), at 8 ns per instruction
    core = ("ctx_switch", "periodic", "isr_latency", "fft_workload", "calib")
    # µC/OS (issue 35): the same but the FFT runs (rerun = false: the µC/OS share of captures/); RIOT:
    # calib, two tasks switching and the ISR latency (the RIOT share of captures/)
    no_board = {("ucos3", "fft_workload-f1"), ("ucos2", "fft_workload-f1")}
    riot = {("riot", "calib"), ("riot", "ctx_switch-n2"), ("riot", "isr_latency")}
    # Zephyr (issue 34): the SystemView runs of the four tests and calib, as for FreeRTOS and ThreadX (not the
    # CTF, MPU and untraced variants: instruction-count comparisons, shift 0 only)
    zephyr = {("zephyr", d) for d in ("calib", "ctx_switch-n2", "ctx_switch-n5", "ctx_switch-n10", "periodic",
                                      "periodic-load", "isr_latency", "fft_workload")}
    assert set(board) == {k for k in ref if "negctl" not in k[1] and k[1].split("-")[0] in core
                          and k[0] in ("baremetal", "freertos", "threadx", "ucos3", "ucos2")
                          and k not in no_board} | riot | zephyr
    # the long run: 50 000 interrupts at shift 0, 5 000 at board speed (captures/ budget, captures/README.md)
    assert ref[("freertos", "isr_latency-long")].options["CT_ITERATIONS"] == "50000"
    for k, s in board.items():
        assert s.shift == 3 and [p.name for p in s.profiles] == ["la100", "la24"]
        shortened = {"CT_ITERATIONS": "5000"} if k == ("freertos", "isr_latency-long") else {}
        assert (s.options, s.variant) == ({**ref[k].options, **shortened}, ref[k].variant)
    negctl = {k: s.options for k, s in ref.items() if "negctl" in k[1]}
    assert set(negctl) == {(r, f"isr_latency-negctl-{kind}") for r in ("freertos", "threadx")
                           for kind in ("delay", "drop")}


def test_negative_control_and_time_scale_entries():
    from vla.campaign import negative_control, time_scale

    assert time_scale(0) == {"icount_shift": 0, "ns_per_insn": 1}
    assert time_scale(3) == {"icount_shift": 3, "ns_per_insn": 8}
    assert negative_control({"CT_TRACE": 1, "CT_ITERATIONS": 200}, 0) == (None, None)
    nc, ex = negative_control({"CT_NEGCTL_DELAY_SITE": 6, "CT_NEGCTL_DELAY_INSNS": 64}, 3)
    assert nc == {"kind": "trace_delay", "site": "isr.task_wake", "instructions": 64,
                  "expected_delta_ns": 512}
    assert ex == {"verdict": "FAIL", "metric": "isr.to_task.latency"}
    nc, ex = negative_control({"CT_NEGCTL_DROP_SITE": 5, "CT_NEGCTL_DROP_EVERY": 4}, 0)
    assert nc == {"kind": "trace_drop", "site": "isr.enter", "every": 4}
    assert ex == {"verdict": "INCOMPLETE", "metric": "isr.to_task.latency"}
