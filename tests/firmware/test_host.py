"""Host-compiled checks of the RTOS-neutral firmware code: statistics and console formatting (ct_fmt.c),
the FFT (ct_fft.c, against numpy), and the site table / ct_site() behaviour (ct_sites.h, ct_mark.h)."""

from __future__ import annotations

import random
import re
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from tests.firmware.console import RESULT_RE, parse_console

ROOT = Path(__file__).resolve().parents[2]
FW = ROOT / "firmware"
HOST = Path(__file__).resolve().parent / "host"
CC = shutil.which("gcc") or shutil.which("cc")

pytestmark = pytest.mark.skipif(CC is None, reason="no host C compiler (gcc/cc)")


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fwhost") / "harness"
    cmd = [CC, "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-DCT_TRACE=1",
           f"-I{HOST}", f"-I{FW / 'include'}", str(HOST / "harness.c"), str(FW / "common" / "ct_fmt.c"),
           str(FW / "common" / "ct_fft.c"), "-lm", "-o", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out


def run(harness: Path, *args: str, stdin: str | None = None) -> str:
    p = subprocess.run([str(harness), *args], input=stdin, capture_output=True, text=True, check=True)
    return p.stdout


def expected_mean(values: list[int]) -> str:
    q = Fraction(sum(values) * 100, len(values))
    r = int(q + Fraction(1, 2))  # round half up, as ct_fmt_mean
    return f"{r // 100}.{r % 100:02d}"


@pytest.mark.parametrize("seed", range(6))
def test_result_line_matches_python_statistics(harness, seed):
    rng = random.Random(seed)
    hi = 2**32 if seed % 2 else 200
    values = [rng.randrange(0 if seed % 2 else 100, hi) for _ in range(rng.randint(1, 50))]
    line = run(harness, "result", "ctx_switch.yield", *map(str, values)).strip()
    m = RESULT_RE.match(line)
    assert m, line
    assert m["metric"] == "ctx_switch.yield"
    assert int(m["n"]) == len(values)
    assert int(m["min"]) == min(values) and int(m["max"]) == max(values)
    assert m["mean"] == expected_mean(values)
    assert m["unit"] == "ticks" and m["ts_hz"] == "1000000"


@pytest.mark.parametrize(("total", "n", "text"), [
    (0, 0, "0.00"), (1, 3, "0.33"), (2, 3, "0.67"), (5, 2, "2.50"), (199999, 100, "1999.99"),
    (1999999, 1000, "2000.00"), (2**40 + 1, 1, "1099511627777.00")])
def test_mean_rounding(harness, total, n, text):
    assert run(harness, "mean", str(total), str(n)).strip() == text


@pytest.mark.parametrize("cap", [1, 2, 10, 40, 71])
def test_truncation_never_overruns(harness, cap):
    full = run(harness, "result", "isr.to_task.latency", "304", "305").strip()
    out = run(harness, "trunc", str(cap), "isr.to_task.latency", "304", "305")
    ret, _, text = out.rstrip("\n").partition("|")
    assert text == full[: cap - 1]
    assert int(ret) == min(len(full), cap - 1)


def test_fail_and_done_lines(harness):
    fail = run(harness, "fail", "fft.peak", "wrong\nbin").strip()
    assert fail == "CT_FAIL fft.peak wrong bin"  # newlines never split a console record
    done = run(harness, "done", "3", "1").strip()
    con = parse_console("\n".join([fail, done]))
    assert con.fails == [("fft.peak", "wrong bin")] and con.done == (3, 1) and not con.passed


@pytest.mark.parametrize("seed", range(4))
def test_fft_matches_numpy(harness, seed):
    rng = np.random.default_rng(seed)
    tone_bin = int(rng.integers(1, 128))
    n = np.arange(256)
    x = 1000 * np.sin(2 * np.pi * tone_bin * n / 256) + rng.normal(0, 50, 256)
    x = x.astype(np.float32)
    lines = run(harness, "fft", stdin=" ".join(f"{v:.9g}" for v in x)).splitlines()
    got = np.array([[float(t) for t in ln.split()] for ln in lines[:256]])
    ref = np.fft.fft(x.astype(np.float64))
    scale = np.abs(ref).max()
    assert np.max(np.abs(got[:, 0] - ref.real)) < 1e-4 * scale
    assert np.max(np.abs(got[:, 1] - ref.imag)) < 1e-4 * scale
    assert lines[256] == f"peak {tone_bin}"
    assert int(np.argmax(np.abs(ref[1:128])) + 1) == tone_bin


def _header_sites() -> list[tuple[int, str, int]]:
    text = (FW / "include" / "ct_sites.h").read_text()
    return [(int(i), name, int(pin)) for i, name, pin in
            re.findall(r"X\((\d+),\s*\w+,\s*\"([^\"]+)\",\s*(\d+)\)", text)]


def test_site_table(harness):
    lines = run(harness, "sites").splitlines()
    table = [(int(a), b, int(c)) for a, b, c in (ln.split() for ln in lines[:-1])]
    assert table == _header_sites()
    ids = [t[0] for t in table]
    pins = [t[2] for t in table]
    assert ids == list(range(1, len(ids) + 1)), "site ids are dense from 1 (append only)"
    assert int(lines[-1].split()[1]) == len(ids) + 1
    assert len(set(pins)) == len(pins), "one pin per site"
    assert not {13, 14} & set(pins), "PG13/PG14 are the status pins"
    assert all(0 <= p <= 15 for p in pins)
    assert len({t[1] for t in table}) == len(table)


@pytest.mark.parametrize(("site", "k"), [(1, 1), (2, 4), (11, 7)])
def test_site_toggles_pin_and_marks_new_level(harness, site, k):
    out = run(harness, "toggle", str(site), str(k)).splitlines()
    pins = [tuple(map(int, ln.split()[1:])) for ln in out if ln.startswith("pin")]
    marks = [tuple(map(int, ln.split()[1:])) for ln in out if ln.startswith("mark")]
    pin = dict((i, p) for i, _, p in _header_sites())[site]
    assert len(pins) == len(marks) == k
    assert [lvl for _, lvl in pins] == [(j + 1) % 2 for j in range(k)]  # pins start low: rise, fall, ...
    assert all(p == pin for p, _ in pins)
    assert marks == [(site, lvl) for _, lvl in pins]  # the event value is the new pin level
    status = dict(ln.split() for ln in out if ln.startswith(("unmasked_marks", "masked_after")))
    # interrupts masked across pin store and trace mark, then restored
    assert status == {"unmasked_marks": "0", "masked_after": "0"}
