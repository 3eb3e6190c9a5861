"""The report in headless Chromium at two widths: not blank, the answer on the first screen, and no
network request made by the page (Chromium's own net log)."""

from __future__ import annotations

import html
import json
import shutil
import struct
import subprocess
import zlib

import pytest

from analyzers.campaign import analyze_dirs
from analyzers.cli import main

from ..conftest import IN_CI
from ._campaign import make_campaign

# headless, and none of the background traffic this closed network refuses
_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync",
          "--hide-scrollbars")
WIDTHS = ((1366, 768), (820, 1100))

#: appended to a copy of the page: where the key elements end, read back with --dump-dom
_PROBE = """<script>(function(){function b(s){var e=document.querySelector(s);
return e?Math.round(e.getBoundingClientRect().bottom):-1;}
function hover(s){var e=document.querySelector(s);if(!e)return '';
e.dispatchEvent(new MouseEvent('mouseover',{bubbles:true}));
return document.getElementById('tip').textContent;}
var th=document.querySelector('table.sortable th:nth-child(4)');if(th)th.click();
document.body.setAttribute('data-probe',JSON.stringify({answer:b('.answer'),agree:b('.top .panel h3'),
cards:b('.top .cards'),chart:b('.grid svg.chart'),h:window.innerHeight,tipbar:hover('.grid rect[data-tip]'),
tippoint:hover('#figures ~ details svg circle[data-tip]'),sorted:th?th.getAttribute('data-dir'):''}));})();
</script>"""


@pytest.fixture(scope="module")
def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        msg = "chromium is not installed (tools/install-system-deps.sh installs Debian's chromium)"
        if IN_CI:
            pytest.fail(msg + " — required in CI")
        pytest.skip(msg)
    return exe


def _run(exe, tmp_path, *args):
    ud = tmp_path / "ud"
    shutil.rmtree(ud, ignore_errors=True)
    return subprocess.run([exe, *_FLAGS, f"--user-data-dir={ud}", *args], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    root = make_campaign(tmp_path_factory.mktemp("captures"))
    out = root.parent / "out"
    analyze_dirs([root], out, scheduler="serial", quiet=True)
    path = root.parent / "report.html"
    assert main(["report", str(out), "-o", str(path)]) == 0
    return path


def page_requests(netlog):
    """URLs the page asked for (Chromium's own service traffic has initiator 'not an origin')."""
    d = json.loads(netlog.read_text())
    start = d["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [e["params"]["url"] for e in d["events"] if e["type"] == start and "url" in e.get("params", {})
            and e["params"].get("initiator") != "not an origin"]


def _png_rows(path):
    """Decode an 8-bit RGB/RGBA PNG into rows of bytes (enough for Chromium screenshots)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
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


def not_blank(shot):
    rows, bpp = _png_rows(shot)
    colours, dark, total = set(), 0, 0
    for row in rows[::4]:
        for i in range(0, len(row), bpp * 4):
            px = row[i : i + 3]
            colours.add(px)
            total += 1
            dark += sum(px) < 600
    return len(colours) > 20 and dark / total > 0.02


@pytest.mark.parametrize("size", WIDTHS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_first_screen_in_chromium(chromium, page, tmp_path, size):
    w, h = size
    shot, net = tmp_path / "shot.png", tmp_path / "net.json"
    r = _run(chromium, tmp_path, f"--screenshot={shot}", f"--window-size={w},{h}", f"--log-net-log={net}",
             page.as_uri())
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    assert not_blank(shot)
    assert page_requests(net) == []
    pos, dom = _positions(chromium, page, tmp_path, w, h)
    assert "Do trace and pins agree? Yes." in dom and "is fastest at" in dom
    for key in ("answer", "agree", "cards", "chart"):
        assert 0 < pos[key] <= pos["h"], (key, pos)  # on the first screen, without scrolling
    # interactive: hovering a bar or an instance shows its tooltip; a header click sorts
    assert " ns" in pos["tipbar"] and "× the fastest" in pos["tipbar"], pos
    assert "instance #" in pos["tippoint"] and "at t=" in pos["tippoint"], pos
    assert pos["sorted"] == "asc"


def _positions(exe, page, tmp_path, w, h):
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", _PROBE + "</body>"))
    dom = _run(exe, tmp_path, "--dump-dom", f"--window-size={w},{h}", probe.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    pos = json.loads(html.unescape(dom.stdout.split('data-probe="', 1)[1].split('"', 1)[0]))
    assert pos["h"] > 0
    return pos, dom.stdout.replace("&amp;", "&")


def test_the_checks_catch_a_blank_page_a_network_request_and_a_short_screen(chromium, page, tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><img src='http://198.51.100.7/x.png'></body></html>")
    shot, net = tmp_path / "bad.png", tmp_path / "net.json"
    r = _run(chromium, tmp_path, f"--screenshot={shot}", "--window-size=800,600", f"--log-net-log={net}",
             bad.as_uri())
    assert r.returncode == 0
    assert not not_blank(shot)
    assert page_requests(net) == ["http://198.51.100.7/x.png"]
    pos, _ = _positions(chromium, page, tmp_path, 1366, 200)
    assert pos["chart"] > pos["h"]  # a screen too short for the answer is caught
