"""Units follow the data (issue 33 items 4 and 6): a TraceX recording without a tick rate keeps
its times in ticks and says so (report tables and axes, `crosstrace info`); QEMU wording only for
virtual-lab captures; one axis per unit family; `info` counts edges per channel index and names
channels that share a name."""

from __future__ import annotations

import re
import shutil
import zipfile
from pathlib import Path

import pytest

from analyzers.campaign import analyze_dirs
from analyzers.cli import main
from analyzers.report import render
from trace_parsers import open_trace
from trace_parsers.sigrok.writer import write_sr

from ..conftest import CORPUS

TRX = CORPUS / "tracex" / "tracex-sample_demo_threadx.trx"


@pytest.fixture(scope="module")
def tracex_campaign(tmp_path_factory) -> Path:
    """A user's own TraceX recording (no run.json, no tick rate) analyzed: the campaign folder."""
    if not TRX.is_file():
        pytest.skip(f"{TRX} is not available")
    root = tmp_path_factory.mktemp("own")
    (root / "rec" / "demo").mkdir(parents=True)
    shutil.copy(TRX, root / "rec" / "demo" / TRX.name)
    man = analyze_dirs([root / "rec"], root / "out", scheduler="serial", quiet=True)
    assert man["failed"] == 0
    return root / "out"


@pytest.fixture(scope="module")
def tracex_report(tracex_campaign) -> str:
    """That recording's report."""
    return render(tracex_campaign)


def test_ticks_stay_ticks_in_the_report(tracex_report):
    text = tracex_report
    own = text[text.index("id='own'"):]
    head = re.findall(r"<th class=\"[^\"]*\">([^<]+)</th>", own)
    assert "mean_ticks" in head and "total_ticks" in head
    assert not any(h.endswith(("_us", "_ms")) for h in head), head
    # the CPU-load and instance charts count time in ticks, never in ms
    axes = re.findall(r"class='tk' text-anchor='end'>([^<]+)</text>", own)
    assert "ticks" in axes and "ms" not in axes and "µs" not in axes, axes


def test_no_qemu_wording_for_a_real_recording(tracex_report):
    assert "QEMU" not in tracex_report and "icount" not in tracex_report


def test_one_axis_per_unit_family(tracex_report):
    """Short durations and long periods are drawn on different box plots."""
    own = tracex_report[tracex_report.index("id='own'"):]
    boxes = re.findall(r"aria-label='box plot'.*?</svg>", own, flags=re.S)
    assert len(boxes) >= 2
    for box in boxes:
        meds = [float(m.replace(",", "")) for m in re.findall(r"median ([\d.,]+) ticks", box)]
        assert meds and max(meds) <= 30 * min(meds) + 1e-9, meds


def test_info_names_a_missing_tick_rate(capsys):
    if not TRX.is_file():
        pytest.skip(f"{TRX} is not available")
    assert main(["info", str(TRX)]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "tick rate" in ln)
    assert "times in ticks" in line and not re.search(r"\) Hz|ticks\) Hz", line), line


def _duplicate_session(tmp_path: Path) -> Path:
    """A sigrok session whose channels 2 and 5 are both named LOADT (2 and 4 edges)."""
    src = write_sr(tmp_path / "u.sr", samplerate=1_000_000,
                   channels=["D0", "D1", "LOADT", "D3", "D4", "LOADX"],
                   edges=[[], [], [10, 20], [], [], [30, 40, 50, 60]], total_samples=100)
    out = tmp_path / "dup.sr"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "metadata":
                data = data.replace(b"=LOADX", b"=LOADT")
            zout.writestr(item, data)
    return out


@pytest.mark.parametrize("small", ("1", "0"), ids=("summary", "full-read"))
def test_info_counts_edges_by_channel_index(tmp_path, capsys, monkeypatch, small):
    p = _duplicate_session(tmp_path)
    monkeypatch.setenv("CROSSTRACE_INFO_SMALL", small)
    assert main(["info", str(p)]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^\s+(\d+)\s+LOADT\s+initial \d+\s+edges (\d+)$", out, re.M)
    edges = {int(i): int(n) for i, n in rows}
    assert edges == {2: 2, 5: 4}  # as sigrok-cli and `crosstrace events` count them
    assert "DUPLICATE_CHANNEL" in out and "'LOADT'" in out


def test_duplicate_names_are_a_diagnostic_of_the_reader(tmp_path):
    tr = open_trace(_duplicate_session(tmp_path))
    (d,) = [x for x in tr.diagnostics if x.code == "DUPLICATE_CHANNEL"]
    assert d.count == 2 and "2, 5" in d.message
    assert [c.name for c in tr.channels].count("LOADT") == 2


def test_own_recording_says_what_it_is_first(tracex_report):
    """Name, RTOS, clock, span and data lost before any chart (issue 33 item 11), in ticks."""
    own = tracex_report[tracex_report.index("id='own'"):]
    facts = re.search(r"<p><b>demo</b> · ([^<]+)</p>", own)
    assert facts, own[:600]
    assert "RTOS ThreadX" in facts.group(1) and "clock unknown: times in ticks" in facts.group(1)
    assert re.search(r"span [\d,]+ ticks", facts.group(1)) and "no data lost" in facts.group(1)
    assert own.index(facts.group(0)) < own.index("<svg")
    assert "per_mtick" in own  # each task's and ISR's rate, per million ticks


def _glance_rows(text: str) -> dict[tuple[str, str], dict[str, str]]:
    own = text[text.index("id='own'"):]
    seg = own[own.index("At a glance"):]
    seg = seg[:seg.index("</table>")]
    head = re.findall(r"<th class=\"[^\"]*\">([^<]+)</th>", seg)
    out = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", seg)[1:]:
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr)]
        row = dict(zip(head, cells))
        out[(row["kind"], row["name"])] = row
    return out


def test_own_recording_at_a_glance(tracex_campaign, tracex_report):
    """Per task its CPU share and response time, per ISR its rate and duration, before any chart
    (issue 33 item 11), each the campaign's own figure for the recording (machine-wide rows), in
    ticks; a table that took another row (a per-core one, another task's) fails."""
    import pandas as pd

    camp = pd.read_parquet(tracex_campaign / "campaign.parquet")
    camp = camp[(camp["source"] == "trace") & (camp["core"].fillna(-1) == -1)].set_index("metric")
    own = tracex_report[tracex_report.index("id='own'"):]
    assert own.index("At a glance") < own.index("<svg")
    rows = _glance_rows(tracex_report)
    tasks = [k for k in rows if k[0] == "task"]
    assert len(tasks) >= 3 and any(k[0] == "ISR" for k in rows)

    def num(cell: str) -> float:
        return float(cell.replace(",", ""))

    checked = 0
    for (kind, name), row in rows.items():
        cpu = camp.loc[f"cpu.load.{'task' if kind == 'task' else 'isr'}.{name}", "mean"]
        assert num(row["cpu_pct"]) == pytest.approx(float(cpu), rel=1e-3), name
        if kind == "task" and f"task.{name}.response_time" in camp.index:
            rt = camp.loc[f"task.{name}.response_time"]
            assert num(row["response_p99_ticks"]) == pytest.approx(float(rt["p99"]), rel=1e-3), name
            checked += 1
    assert checked >= 1


def test_a_scatter_of_many_series_keeps_a_bounded_number_of_points() -> None:
    """Six RTOSes of 5,000 instances: at most CHART_POINTS hoverable points in the chart (each series
    at least MIN_POINTS), every series' smallest and largest value still drawn."""
    import numpy as np

    from analyzers.report import figures as F

    rng = np.random.default_rng(7)
    ser = [F.Series(f"rtos{k}", rng.normal(1000 + k, 5, 5000), np.arange(5000) * 1e3,
                    np.arange(5000)) for k in range(6)]
    svg = F.scatter(ser)
    assert svg.count("<circle") <= F.CHART_POINTS * 1.05
    for s in ser:  # the extremes: the tips of the smallest and largest value
        for i in (int(np.argmin(s.values)), int(np.argmax(s.values))):
            assert f"{s.label} instance #{i} at" in svg, (s.label, i)
    one = F.scatter(ser[:1])
    assert F.MAX_POINTS * 0.9 <= one.count("<circle") <= F.MAX_POINTS * 1.05
