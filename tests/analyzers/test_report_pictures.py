"""Pictures where people would rather look than read (issue 33 "Also"): the period jitter of every
RTOS on one axis per periodic test and time scale, switch time against the number of tasks with
readable labels, and Thread-Metric's result as its iteration rate."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from analyzers import _synth as S
from analyzers.campaign import analyze_dirs
from analyzers.report import render
from analyzers.report.figures import xy_chart


@pytest.fixture(scope="module")
def periodic_two_scales(tmp_path_factory) -> str:
    """FreeRTOS and ThreadX's periodic test at 1 and at 8 ns per instruction (ThreadX twice as
    jittery), analyzed and reported."""
    root = tmp_path_factory.mktemp("jitter")
    for rtos, k in (("freertos", 1), ("threadx", 2)):
        for run, npi in (("ref", 1), ("board", 8)):
            sc = S.periodic(n=60, jitter_ns=300 * k * npi, seed=k + npi)
            ts = {"icount_shift": {1: 0, 8: 3}[npi], "ns_per_insn": npi}
            S.write_capture_folder(root / "cap" / "qemu_netduinoplus2" / rtos / "periodic" / run, sc,
                                   rtos=rtos, run_id=run, trace=S.to_trace(sc), capture=S.to_capture(sc),
                                   extra={"time_scale": ts})
    assert analyze_dirs([root / "cap"], root / "out", scheduler="serial", quiet=True)["failed"] == 0
    return render(root / "out")


def test_jitter_of_every_rtos_on_one_axis_per_time_scale(periodic_two_scales):
    text = periodic_two_scales
    sec = text[text.index("<h2 id='jitter'>"):text.index("id='comparison'")]
    charts = re.findall(r"<svg class='chart'[^>]*aria-label='([^']*)'.*?</svg>", sec, re.S)
    assert sorted(charts) == ["periodic.fast.jitter.abs · 1 ns/insn", "periodic.fast.jitter.abs · 8 ns/insn"]
    for svg in re.findall(r"<svg class='chart'.*?</svg>", sec, re.S):
        assert svg.count("<polyline") == 2  # one ECDF per RTOS
        assert re.findall(r"class='tk'>(\w+) \(n=\d+\)</text>", svg) == ["freertos", "threadx"]
    # the 50 % point of each line: ThreadX's jitter is twice FreeRTOS's in each chart
    for svg in re.findall(r"<svg class='chart'.*?</svg>", sec, re.S):
        tips = dict(re.findall(r"data-tip='(\w+): 50% of \d+ periods within ([\d.]+) µs'", svg))
        assert float(tips["threadx"]) > 1.5 * float(tips["freertos"]) > 0


def test_labels_at_the_end_of_close_lines_do_not_overlap():
    """FreeRTOS 419 and RIOT 432 ns end 2 px apart: their names used to be drawn over each other."""
    svg = xy_chart([("freertos", [2, 5], [419, 419]), ("riot", [2, 5], [432, 432]),
                    ("zephyr", [2, 5], [760, 787])], "tasks", "ns", "t")
    ys = sorted(float(y) for y in re.findall(r"<text x='[\d.]+' y='([\d.]+)' class='lb'", svg))
    assert len(ys) == 3 and min(b - a for a, b in zip(ys, ys[1:])) >= 12


def _tm_campaign(tmp_path: Path) -> Path:
    rows, caps = [], []
    for rtos, ns_per_iter in (("threadx", 8312.5), ("zephyr", 8125.0)):
        cap = f"qemu_netduinoplus2/{rtos}/tm_basic/ref"
        base = {"capture": cap, "board": "qemu_netduinoplus2", "rtos": rtos, "app": "tm_basic", "variant": "",
                "run_id": "ref", "core": -1, "excluded": 0, "unmatched": 0, "std": 0.0}
        for src, prof in (("logic", "ideal"), ("trace", "")):
            rows.append({**base, "metric": "tm.ns_per_iter", "source": src, "profile": prof, "kind": "scalar",
                         "unit": "ns", "n": 1, **dict.fromkeys(("mean", "min", "p1", "p50", "p99", "max"),
                                                              ns_per_iter)})
            rows.append({**base, "metric": "tm.period", "source": src, "profile": prof,
                         "kind": "distribution", "unit": "ns", "n": 1,
                         **dict.fromkeys(("mean", "min", "p1", "p50", "p99", "max"), 5e6)})
        rows.append({**base, "metric": "tm.basic.period", "source": "firmware", "profile": "",
                     "kind": "summary", "unit": "ns", "n": 2,
                     **dict.fromkeys(("mean", "min", "p1", "p50", "p99", "max"), 5e6)})
        caps.append({"capture": cap, "folder": cap, "status": "ok", "board": "qemu_netduinoplus2",
                     "rtos": rtos, "app": "tm_basic", "variant": "", "run_id": "ref",
                     "time_scale": {"icount_shift": 0, "ns_per_insn": 1},
                     "sources": {"trace": {"format": "systemview"}, "logic:ideal": {"format": "sigrok"}}})
    pd.DataFrame(rows).to_parquet(tmp_path / "campaign.parquet")
    (tmp_path / "manifest.json").write_text(json.dumps({"captures": caps, "failed": 0, "code_hash": "x"}))
    return tmp_path


def test_thread_metric_panels_give_the_iteration_rate(tmp_path):
    """Thread-Metric's first-screen chart is its time per iteration with the iterations per second
    beside each bar (it showed the 5 ms reporting period, the same for every RTOS)."""
    first = render(_tm_campaign(tmp_path))
    first = first[first.index("<section id='answer'>"):first.index("</section>")]
    svg = re.search(r"<svg class='chart'[^>]*aria-label='tm_basic · 1 ns/insn'.*?</svg>", first, re.S)
    assert svg, first[:2000]
    svg = svg.group(0)
    assert "tm.ns_per_iter (at the pins, ideal); beside: iterations/s" in svg
    assert "123,077/s · 8,125 insn · 1.00×" in svg and "120,301/s · 8,312 insn · 1.02×" in svg
    assert "iterations per second" in first
