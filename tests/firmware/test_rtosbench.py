"""RTOSBench on the porting layer (firmware/rtosbench, apps/rtosbench, the RTOSBench section of
captures/campaign.toml): the campaign runs every test on FreeRTOS, Zephyr and ThreadX in the published
configuration (section 3 of ../shared/specs/published-results.md: 20 Hz tick, asserts off, no stack
protection, non-tickless Zephyr, 1000 iterations untraced; traced 250: the captures/ budget) at board
speed (jitter at 1 ns/instruction); the image's time counters, reports and sites agree with the upstream
sources and with the analyzer; and one image per RTOS, built as the campaign builds it, boots to CT_DONE with
its counters' CT_RESULT lines (slow: ~10 s for FreeRTOS, ~50 s for Zephyr). Upstream sources from
$CT_DEPS_DIR/RTOSBench: skipped without them, failed in CI."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from analyzers.metrics.rtosbench import T1, T2, TESTS, expected_count
from tests.conftest import missing, need_tool
from tests.firmware.conftest import deps_dir, rtos_sources
from tests.firmware.qemu_smoke import qemu_command
from tests.firmware.zephyr._build import zephyr_ws

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "firmware" / "apps" / "rtosbench"
PORT = ROOT / "firmware" / "rtosbench"
sys.path.insert(0, str(ROOT / "firmware" / "tools"))
import capture as cap_mod  # noqa: E402

RUNS = [(s, rid) for s, rid in cap_mod.load_campaign() if s.app == "rtosbench"]
RTOSES = ("freertos", "zephyr")
#: the traced runs' iterations (docs/benchmarks.md "RTOSBench": captures/ budget); untraced: published 1000
TRACED_ITER = "250"
COUNTED = ("round_robin", "interrupt_processing", "mutex", "mq", "sem")
#: the booted image per RTOS (one each: CI time)
SAMPLE = {"freertos": "mutex", "zephyr": "round_robin"}


def rtosbench_dir() -> Path:
    d = deps_dir() / "RTOSBench"
    if not (d / "include" / "porting_layer.h").is_file():
        missing(f"RTOSBench not in {deps_dir()}: set CT_DEPS_DIR to a folder extracted by "
                "../shared/deps/extract.sh")
    return d


def app_defaults() -> dict[str, str]:
    text = (APP / "options.cmake").read_text()
    return dict(re.findall(r'"(CT_RB_\w+|CT_FREERTOS_CFG)=([^"]+)"', text))


def cmake_tests() -> dict[str, tuple[str, int]]:
    """rtosbench.cmake's table: CT_RB_TEST -> (upstream source, reports before the run ends)."""
    text = (PORT / "rtosbench.cmake").read_text()
    return {t: (f"{src}.c", int(n)) for t, src, n in re.findall(r'"(\w+)=([\w/-]+):(\d)"', text)}


def test_campaign_runs_every_test_on_both_rtoses_in_the_published_configuration():
    """Every test traced and untraced on each RTOS at board speed (shift 3: at 1 ns/instruction one la100
    sample is > 2 % of the intervals under ~550 ns; the firmware's timing is exactly 8x the instruction
    count), traced with the ideal and la100 profiles, untraced (pins only) la100; jitter on FreeRTOS and
    Zephyr at 1 ns/instruction, la100; every run is a committed capture."""
    want = {(r, f"{t}{u}", "board") for r in (*RTOSES, "threadx") for t in COUNTED for u in ("", "-untraced")}
    want |= {(r, "jitter", "ref") for r in RTOSES}  # ThreadX traced: the sites only
    got = {(s.rtos, s.variant, rid) for s, rid in RUNS}
    assert got == want and len(RUNS) == len(want)
    defaults = app_defaults()
    assert defaults["CT_RB_ITER"] == "1000" and defaults["CT_RB_TICK_HZ"] == "20"
    assert defaults["CT_FREERTOS_CFG"] == "2"  # FreeRTOS: asserts and stack-overflow checks off
    for s, rid in RUNS:
        assert s.app == "rtosbench" and s.options["CT_RB_TEST"] == s.variant.removesuffix("-untraced")
        assert "CT_RB_TICK_HZ" not in s.options and "CT_ZEPHYR_MPU" not in s.options, s
        # the published 1000 untraced; traced 250 (size), jitter 20 activations (each one 50 ms tick)
        untraced = s.variant.endswith("-untraced")
        assert s.options.get("CT_RB_ITER") == (None if untraced else "20" if s.variant == "jitter"
                                               else TRACED_ITER), s
        traced_tx = s.rtos == "threadx" and not untraced
        assert (s.options.get("CT_TX_TRACE_FILTER") == "0x7FF") == traced_tx, s
        # TraceX's buffer (the .trx file) sized to the run: 1200 bytes of header and registry + 32 per record
        assert ("CT_TX_TRACE_BYTES" in s.options) == traced_tx, s
        if traced_tx:
            records = {"round_robin": 2, "interrupt_processing": 2, "mutex": 6}.get(s.variant, 4)
            need = 1200 + 32 * (records * int(TRACED_ITER) + 2)
            assert need <= int(s.options["CT_TX_TRACE_BYTES"]) <= need + 8192, s
        assert (ROOT / "captures" / cap_mod.BOARD / s.rtos / s.app_dir / rid / "run.json").is_file(), s
        if s.variant == "jitter":  # one activation per tick on FreeRTOS, two on Zephyr (k_sleep)
            period = s.options.get("CT_PERIOD_FAST_MS", "50")
            assert period == ("100" if s.rtos == "zephyr" else "50"), s
            assert "CT_PERIOD_FAST_MS=50" in (APP / "options.cmake").read_text()
        assert (s.options.get("CT_TRACE") == "0") == s.variant.endswith("-untraced"), s
        profiles = [p.name for p in s.profiles]
        if s.variant == "jitter":
            assert (s.shift, rid, profiles) == (0, "ref", ["la100"]), s
        else:
            assert (s.shift, rid, profiles) == (3, "board", ["la100"] if untraced else ["ideal", "la100"]), s
    zconf = (PORT / "zephyr.conf").read_text() + (ROOT / "firmware" / "zephyr" / "prj.conf").read_text()
    for line in ("CONFIG_SYS_CLOCK_TICKS_PER_SEC=20", "CONFIG_TICKLESS_KERNEL=n", "CONFIG_ASSERT=n"):
        assert re.search(rf"^{line}$", zconf, re.M), line


def test_counters_and_reports_match_the_upstream_sources():
    """Each test's time counters (DECLARE_TIME_COUNTERS) are the analyzer's metrics, in order, and the run
    ends at its last REPORT_BENCHMARK_RESULTS (jitter: none, the run ends when its monitor suspends)."""
    up = rtosbench_dir() / "tests"
    table = cmake_tests()
    assert set(table) == set(COUNTED) | {"jitter"}
    for test, (src, reports) in table.items():
        text = (up / src).read_text()
        counters = re.findall(r"^DECLARE_TIME_COUNTERS\(\w+, (\w+)\)", text, re.M)
        assert reports == len(re.findall(r"^\s*REPORT_BENCHMARK_RESULTS\(", text, re.M)), test
        if test == "jitter":
            assert "WRITE_T1_COUNTER" not in text and "no_task_delay" in text
            continue
        assert len(counters) == len(TESTS[test]), test
        if len(counters) == 2:  # s_to_r (the unblock) is declared first, r_to_s (the block) second
            assert counters == ["s_to_r", "r_to_s"] and TESTS[test] == ("unblock", "block"), test


def test_sites_are_read_by_no_other_analyzer():
    """T1/T2 reuse the Thread-Metric sites; that analyzer reads them only with CT_TM_SITE_EVERY."""
    port = (PORT / "rb_port_ct.c").read_text()
    for site in (T1, *T2):
        c = "CT_SITE_" + site.upper().replace(".", "_")
        assert c in port, site
    from analyzers import _synth as S
    from analyzers.metrics.thread_metric import analyze as tm_analyze
    from analyzers.sites import load_sites

    sc = S.Scenario("rtosbench", options={"CT_RB_TEST": "sem", "CT_RB_ITER": 1},
                    marks=[(1000, T1), (2000, T2[0]), (3000, T1), (4000, T2[1])])
    assert tm_analyze(S.to_trace(sc), load_sites(), sc.options).table.num_rows == 0


@pytest.mark.qemu
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("rtos", RTOSES)
def test_sampled_image_boots_to_done_with_every_counter(rtos, tmp_path, monkeypatch):
    for tool in ("make", "cmake", "ninja", "arm-none-eabi-gcc", "qemu-system-arm"):
        need_tool(tool)
    rtosbench_dir()
    if rtos == "zephyr":
        zephyr_ws()
    else:
        rtos_sources(rtos)
    monkeypatch.setenv("FW_BUILD", str(tmp_path / "fw"))
    test = SAMPLE[rtos]
    spec = next(s for s, rid in RUNS if s.rtos == rtos and s.variant == test and rid == "board")
    elf = cap_mod.build_firmware(spec)
    p = subprocess.run(qemu_command(elf, str(spec.shift)), cwd=tmp_path, stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=120)
    text = p.stdout.decode("utf-8", "replace")
    assert p.returncode == 0 and f"CT_DONE ok={len(TESTS[test])} fail=0" in text, text[-2000:]
    n = expected_count(test, int(spec.options.get("CT_RB_ITER", 1000)))
    for name in TESTS[test]:
        m = re.search(rf"^CT_RESULT rb\.{test}\.{name} n=(\d+) min=(\d+) ", text, re.M)
        assert m and int(m[1]) == n and int(m[2]) > 0, (name, text[-2000:])
    assert ",CT_RB_TICK_HZ=20," in text and "dropped=0" in text
