"""The report in headless Chromium at a phone's and a desktop's width (390 and 1440 px): nothing
wider than the page, no "NaN"/"nan×" text, no empty chart, the outliers' commands inside their
table (issue 33 item 9 and "Also")."""

from __future__ import annotations

import html
import json
import shutil

import pandas as pd
import pytest

from analyzers.campaign import analyze_dirs
from analyzers.cli import main

from ._campaign import make_campaign
from .test_report_browser import _run, chromium  # noqa: F401  (fixture)

LONG = "qemu_netduinoplus2/freertos/isr_latency-negctl-delay/ref"  # a bundled control's id

_PROBE = """<script>(function(){document.querySelectorAll('details').forEach(function(d){d.open=true;});
var de=document.documentElement,empty=[],cut=[];
document.querySelectorAll('svg.chart').forEach(function(s,i){
 if(!s.querySelector('rect[data-tip],circle[data-tip],path,polyline')||s.getBoundingClientRect().width<50)
  empty.push(i);});
document.querySelectorAll('td.cmd').forEach(function(td){var w=td.closest('.wrap');
 if(w&&w.scrollWidth>w.clientWidth+1)cut.push(td.textContent.slice(0,40));});
var txt=document.body.innerText;
document.body.setAttribute('data-probe',JSON.stringify({sw:de.scrollWidth,cw:de.clientWidth,
 charts:document.querySelectorAll('svg.chart').length,empty:empty,cut:cut.slice(0,3),
 nan:(txt.match(/NaN|nan×|\\bnan\\b/g)||[]).length}));})();</script>"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """The synthetic campaign's report, with one capture declared a negative control under the
    long id of a bundled one (what made the summary box overflow at 390 px)."""
    root = make_campaign(tmp_path_factory.mktemp("captures"))
    out = root.parent / "out"
    analyze_dirs([root], out, scheduler="serial", quiet=True)
    xv = pd.read_parquet(out / "crossval.parquet")
    cid = str(xv.loc[xv["capture"].str.contains("isr_latency"), "capture"].iloc[0])
    xv.loc[xv["capture"] == cid, ["capture", "verdict", "raw_rel_diff_pct"]] = [LONG, "FAIL", 4.99]
    xv.to_parquet(out / "crossval.parquet")
    man = json.loads((out / "manifest.json").read_text())
    for c in man["captures"]:
        if c["capture"] == cid:
            c.update(capture=LONG, verdict="FAIL", expected_verdict="FAIL", negative_control={
                "description": "kind=trace_delay, site=isr.task_wake, instructions=64, expected_delta_ns=64"})
    (out / "manifest.json").write_text(json.dumps(man))
    shutil.copytree(out / "captures" / cid, out / "captures" / LONG)
    path = root.parent / "report.html"
    assert main(["report", str(out), "-o", str(path)]) == 0
    return path


def _probe(exe, page, tmp_path, width):
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", _PROBE + "</body>"))
    dom = _run(exe, tmp_path, "--dump-dom", f"--window-size={width},900", probe.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    return json.loads(html.unescape(dom.stdout.split('data-probe="', 1)[1].split('"', 1)[0]))


@pytest.mark.parametrize("width", (390, 1440))
def test_nothing_overflows_and_every_chart_has_data(chromium, page, tmp_path, width):  # noqa: F811
    assert LONG in page.read_text()
    got = _probe(chromium, page, tmp_path, width)
    assert got["sw"] <= got["cw"], got  # no sideways scrolling of the page
    assert got["charts"] >= 12 and got["empty"] == [], got
    assert got["nan"] == 0, got
    if width >= 1440:  # a phone scrolls a wide table inside its box; a desktop shows it whole
        assert got["cut"] == [], got
