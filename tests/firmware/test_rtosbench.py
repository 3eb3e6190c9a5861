"""RTOSBench on the porting layer (firmware/rtosbench, apps/rtosbench, captures/campaign-rtosbench.toml):
the campaign runs every test on FreeRTOS and Zephyr in the published configuration (section 3 of
../shared/specs/published-results.md: 20 Hz tick, asserts off, no stack protection, non-tickless Zephyr, 1000
iterations); the image's time counters, reports and sites agree with the upstream sources and with the
analyzer; and one image per RTOS, built as the campaign builds it, boots to CT_DONE with its counters'
CT_RESULT lines (slow: ~10 s for FreeRTOS, ~50 s for Zephyr). Upstream sources from $CT_DEPS_DIR/RTOSBench:
skipped without them, failed in CI."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from analyzers.metrics.rtosbench import T1, T2, TESTS, expected_count
from tests.conftest import IN_CI, missing, need_tool
from tests.firmware.conftest import deps_dir, rtos_sources
from tests.firmware.qemu_smoke import qemu_command
from tests.firmware.zephyr._build import zephyr_ws

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "firmware" / "apps" / "rtosbench"
PORT = ROOT / "firmware" / "rtosbench"
sys.path.insert(0, str(ROOT / "firmware" / "tools"))
import capture as cap_mod  # noqa: E402

CAMPAIGN = ROOT / "captures" / "campaign-rtosbench.toml"
RUNS = cap_mod.load_campaign(CAMPAIGN)
RTOSES = ("freertos", "zephyr")
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
    assert not [s for s, _ in cap_mod.load_campaign() if s.app == "rtosbench"], \
        "campaign.toml runs are committed captures: move the block there with its captures"
    kinds = (("", "ref"), ("", "board"), ("-untraced", "ref"), ("-untraced", "board"))
    want = {(r, f"{t}{u}", rid) for r in RTOSES for t in COUNTED for u, rid in kinds}
    want |= {(r, "jitter", "ref") for r in RTOSES}
    want |= {("threadx", f"{t}-untraced", "ref") for t in COUNTED}
    want |= {("threadx", t, rid) for t in COUNTED for rid in ("ref", "board")}  # traced: the sites only
    got = {(s.rtos, s.variant, rid) for s, rid in RUNS}
    assert got == want and len(RUNS) == len(want)
    defaults = app_defaults()
    assert defaults["CT_RB_ITER"] == "1000" and defaults["CT_RB_TICK_HZ"] == "20"
    assert defaults["CT_FREERTOS_CFG"] == "2"  # FreeRTOS: asserts and stack-overflow checks off
    for s, rid in RUNS:
        assert s.app == "rtosbench" and s.options["CT_RB_TEST"] == s.variant.removesuffix("-untraced")
        assert "CT_RB_TICK_HZ" not in s.options and "CT_ZEPHYR_MPU" not in s.options, s
        # 1000 but for jitter (size) and ThreadX's traced mutex (its TraceX buffer holds 900 iterations)
        short = s.variant == "jitter" or (s.rtos, s.variant) == ("threadx", "mutex")
        assert ("CT_RB_ITER" in s.options) == short, s
        traced_tx = s.rtos == "threadx" and s.options.get("CT_TRACE") != "0"
        assert (s.options.get("CT_TX_TRACE_FILTER") == "0x7FF") == traced_tx, s
        if s.variant == "jitter":  # one activation per tick on FreeRTOS, two on Zephyr (k_sleep)
            period = s.options.get("CT_PERIOD_FAST_MS", "50")
            assert period == ("100" if s.rtos == "zephyr" else "50"), s
            assert "CT_PERIOD_FAST_MS=50" in (APP / "options.cmake").read_text()
        assert (s.options.get("CT_TRACE") == "0") == s.variant.endswith("-untraced"), s
        assert s.shift == (3 if rid == "board" else 0), s
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
    spec = next(s for s, rid in RUNS if s.rtos == rtos and s.variant == test and rid == "ref")
    elf = cap_mod.build_firmware(spec)
    p = subprocess.run(qemu_command(elf, str(spec.shift)), cwd=tmp_path, stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=120)
    text = p.stdout.decode("utf-8", "replace")
    assert p.returncode == 0 and f"CT_DONE ok={len(TESTS[test])} fail=0" in text, text[-2000:]
    n = expected_count(test, 1000)
    for name in TESTS[test]:
        m = re.search(rf"^CT_RESULT rb\.{test}\.{name} n=(\d+) min=(\d+) ", text, re.M)
        assert m and int(m[1]) == n and int(m[2]) > 0, (name, text[-2000:])
    assert "CT_INFO rb.tick_hz=20" in text and "dropped=0" in text
