"""The console contract documented in firmware/README.md is the one the parser (console.py) implements."""

from __future__ import annotations

import re
from pathlib import Path

from tests.firmware.console import RESULT_RE, parse_console

README = Path(__file__).resolve().parents[2] / "firmware" / "README.md"


def test_readme_regex_is_the_parser_regex():
    text = README.read_text()
    m = re.search(r"- Regex: `(\^CT_RESULT .+?\$)`", text)
    assert m, "README must document the CT_RESULT regex"
    assert m.group(1) == RESULT_RE.pattern


def test_parse_full_run():
    text = "\r\n".join([
        "", "CT_BOOT crosstrace",
        "CT_CONFIG rtos=freertos rtos_version=V11.1.0+ board=qemu_netduinoplus2 app=fft_workload variant=- "
        "trace=1 git=abc opts=CT_TRACE=1",
        "CT_INFO ts_hz=1000000000",
        "CT_FFT frame=0 peak_bin=32 peak_hz=125",
        "CT_RESULT fft.duration n=4 min=34614 mean=34687.50 max=34908 unit=ticks ts_hz=1000000000",
        "CT_TRACE file=trace.SVDat events=11587 bytes=65149 dropped=0",
        "CT_DONE ok=1 fail=0", ""])
    con = parse_console(text)
    assert con.passed
    r = con.results["fft.duration"]
    assert (r.n, r.min, r.mean, r.max, r.ts_hz) == (4, 34614, 34687.5, 34908, 10**9)
    assert con.fft == [(0, 32, 125)]
    assert con.trace == {"file": "trace.SVDat", "events": "11587", "bytes": "65149", "dropped": "0"}
    assert con.config.startswith("rtos=freertos")


def test_missing_or_failed_sentinel_is_not_a_pass():
    assert not parse_console("CT_RESULT a n=1 min=1 mean=1.00 max=1 unit=ticks ts_hz=1\n").passed
    assert not parse_console("CT_FAIL x boom\nCT_DONE ok=1 fail=1\n").passed
    assert not parse_console("CT_DONE ok=0 fail=0\n").passed
