"""`crosstrace report`: one self-contained HTML file with the key numbers; rendered in Chromium."""

import re
import shutil
import struct
import subprocess
import zlib

import pytest

from analyzers.batch import analyze_dirs, load_campaign
from analyzers.cli import main

from ..conftest import IN_CI
from ._campaign import make_campaign

# headless, and none of the background traffic this closed network refuses
_CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync")


def _chromium(exe: str, tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([exe, *_CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'ud'}", *args],
                          capture_output=True, text=True, timeout=90)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = make_campaign(tmp_path_factory.mktemp("captures"))
    out = root.parent / "out"
    analyze_dirs([root], out, scheduler="serial", quiet=True)
    html_path = root.parent / "report.html"
    assert main(["report", str(out), "-o", str(html_path)]) == 0
    return out, html_path


def test_report_is_self_contained_and_has_the_key_numbers(report):
    out, path = report
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert not re.search(r"""(src|href)=['"](?!data:|#)""", text)  # nothing loaded from elsewhere
    assert text.count("data:image/png;base64,") >= 4  # histograms/box plots per metric
    d = load_campaign(out)
    xv = d["crossval"]
    assert text.count(">PASS<") >= len(xv)
    for m in ("ctx_switch.yield", "isr.to_task.latency", "fft.duration", "periodic.fast.period"):
        assert m in text
    # the threadx context-switch mean and its multiple of the fastest RTOS appear as rendered numbers
    comp = d["comparison"]
    row = comp[
        (comp.metric == "ctx_switch.yield")
        & (comp.source == "trace")
        & (comp.rtos == "threadx")
        & (comp.variant == "")
    ].iloc[0]
    assert f"{row.mean_ns:,.1f}" in text and f"{row.x_fastest:.4g}" in text
    assert "Context switch per number of tasks" in text and ">N=2<" in text
    assert "synthetic" in text  # provenance: firmware revision / config
    assert "qemu_netduinoplus2/freertos/broken/r1" in text  # the failed capture is listed


def test_report_missing_campaign(tmp_path, capsys):
    assert main(["report", str(tmp_path), "-o", str(tmp_path / "r.html")]) == 2
    assert "manifest.json" in capsys.readouterr().err


def _png_rows(path):
    """Decode an 8-bit RGB/RGBA PNG into rows of bytes (enough for Chromium screenshots)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + n]
        if typ == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6)
            bpp = 3 if ctype == 2 else 4
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return rows, bpp


def test_report_renders_in_headless_chromium(report, tmp_path):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        msg = "chromium is not installed (tools/install-system-deps.sh installs Debian's chromium)"
        if IN_CI:
            pytest.fail(msg + " — required in CI")
        pytest.skip(msg)
    out, path = report
    shot = tmp_path / "shot.png"
    dom = _chromium(exe, tmp_path, "--dump-dom", path.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "Trace versus capture agreement" in dom.stdout and "ctx_switch.yield" in dom.stdout
    comp = load_campaign(out)["comparison"]
    row = comp[(comp.metric == "isr.to_task.latency") & (comp.source == "trace") & (comp.rtos == "threadx")]
    assert f"{row.mean_ns.iloc[0]:,.1f}" in dom.stdout  # a key number, as rendered by the browser
    assert dom.stdout.count(">PASS<") >= 8
    r = _chromium(exe, tmp_path, f"--screenshot={shot}", "--window-size=1200,900", path.as_uri())
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    rows, bpp = _png_rows(shot)
    # not blank: many distinct colours, and a good share of non-white pixels
    colours = set()
    dark = 0
    total = 0
    for row in rows[::4]:
        for i in range(0, len(row), bpp * 4):
            px = row[i : i + 3]
            colours.add(px)
            total += 1
            dark += sum(px) < 600
    assert len(colours) > 20 and dark / total > 0.02
