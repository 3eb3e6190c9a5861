"""Nothing is pooled across time scale, analyzer profile, tracer or build configuration: not in
comparison.csv, not in overhead.csv, not in the report's tables and first sentence (issue 33 item 1)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from analyzers.campaign.tables import comparison_table, overhead_table, time_scale_label
from analyzers.report import render

BOARD = "qemu_netduinoplus2"
ONE, EIGHT = {"icount_shift": 0, "ns_per_insn": 1}, {"icount_shift": 3, "ns_per_insn": 8}
# ctx_switch.yield at the pins (ideal analyzer), N = 2: the bundled campaign's figures
RUNS = [  # rtos, run id, time scale, tracer, mean ns
    ("freertos", "ref", ONE, "systemview", 419.0),
    ("freertos", "board", EIGHT, "systemview", 3358.0),
    ("threadx", "ref", ONE, "tracex", 188.0),
    ("threadx", "board", EIGHT, "tracex", 1504.0),
    ("zephyr", "ref", ONE, "systemview", 760.0),
]


def _campaign(variant: str = "n2") -> tuple[pd.DataFrame, list[dict]]:
    rows, caps = [], []
    for rtos, run, ts, tracer, mean in RUNS:
        cap = f"{BOARD}/{rtos}/ctx_switch-{variant}/{run}"
        for src, prof in (("logic", "ideal"), ("trace", "")):
            rows.append({"capture": cap, "board": BOARD, "rtos": rtos, "app": "ctx_switch",
                         "variant": variant, "run_id": run, "metric": "ctx_switch.yield", "source": src,
                         "profile": prof,
                         "core": -1, "kind": "distribution", "unit": "ns", "n": 399, "mean": mean,
                         "std": 1.0, "min": mean, "p1": mean, "p50": mean, "p99": mean, "max": mean,
                         "excluded": 0, "unmatched": 0})
        caps.append({"capture": cap, "folder": cap, "status": "ok", "board": BOARD, "rtos": rtos,
                     "app": "ctx_switch", "variant": variant, "run_id": run, "time_scale": ts,
                     "sources": {"trace": {"format": tracer}, "logic:ideal": {"format": "sigrok"}},
                     "provenance": {"options": {"CT_NTASKS": int(variant[1:])}}})
    return pd.DataFrame(rows), caps


def test_time_scale_label():
    assert time_scale_label(EIGHT) == "8 ns/insn" and time_scale_label(ONE) == "1 ns/insn"
    assert time_scale_label(None) == time_scale_label({}) == "real time"


def test_comparison_never_averages_time_scales_and_ranks_like_with_like():
    camp, caps = _campaign()
    comp = comparison_table(camp, caps)
    pins = comp[comp["source"] == "logic"]
    means = {(r.rtos, r.time_scale): r.mean_ns for r in pins.itertuples()}
    expected = {(rtos, time_scale_label(ts)): mean for rtos, _, ts, _, mean in RUNS}
    assert means == expected  # the old table had FreeRTOS at (419 + 3358) / 2 = 1888.5
    one = pins[pins["time_scale"] == "1 ns/insn"].sort_values("rank")
    assert list(one["rtos"]) == ["threadx", "freertos", "zephyr"]
    assert one["x_fastest"].iloc[-1] == pytest.approx(760 / 188)
    eight = pins[pins["time_scale"] == "8 ns/insn"].set_index("rtos")
    assert set(eight.index) == {"freertos", "threadx"} and eight.loc["threadx", "rank"] == 1
    # every row names its time scale and tracer; instructions at 8 ns each
    assert set(comp["tracer"]) == {"systemview", "tracex"}
    assert eight.loc["freertos", "mean_cycles"] == pytest.approx(3358 / 8)
    assert set(eight["cycles_unit"]) == {"insn"}


def test_overhead_pairs_within_one_time_scale():
    camp, caps = _campaign()
    untraced = camp[camp["source"] == "logic"].copy()
    untraced["capture"] += "-untraced"
    untraced["mean"] = untraced["mean"] - 100.0  # every traced build costs 100 ns more
    caps_u = [{**c, "capture": c["capture"] + "-untraced", "sources": {}} for c in caps]
    ov = overhead_table(pd.concat([camp, untraced]), caps + caps_u)
    assert len(ov) == len(RUNS) and (ov["overhead_ns"] == 100.0).all()
    assert set(ov["time_scale"]) == {"1 ns/insn", "8 ns/insn"}


@pytest.fixture()
def campaign_dir(tmp_path: Path) -> Path:
    camp, caps = _campaign()
    camp.to_csv(tmp_path / "campaign.csv", index=False)
    (tmp_path / "manifest.json").write_text(json.dumps({"captures": caps, "failed": 0, "code_hash": "x"}))
    return tmp_path


def test_report_tables_and_answer_keep_time_scales_apart(campaign_dir):
    text = render(campaign_dir)
    first = text[text.index("<section id='answer'>"):text.index("</section>")]
    assert "1,888" not in text and "1,889" not in text  # no mean of 419 and 3,358 anywhere
    m = re.search(r"<b>(\w+)</b> is fastest at <code>ctx_switch\.yield</code>: <b>([\d.,]+) ns</b>", first)
    assert m and m.group(1) == "threadx" and m.group(2) == "188"
    assert "1 ns per instruction" in first and "variant n2" in first
    # the number-of-tasks table: one row per time scale and RTOS, never a mean of the two
    nt = text[text.index("id='ntasks'"):text.index("id='comparison'")]
    rows = re.findall(r"<tr><td class=\"l\">([^<]*)</td><td class=\"l\">(\w+)</td>.*?data-v='([\d.]+)'", nt)
    assert {(ts, r, float(v)) for ts, r, v in rows} == {
        (time_scale_label(ts), rtos, mean) for rtos, _, ts, _, mean in RUNS}
    # every first-screen chart is one time scale
    titles = re.findall(r"class='ct'>ctx_switch n2 · ([^<]+)</text>", first)
    assert set(titles) == {"1 ns/insn", "8 ns/insn"}


def test_old_campaign_without_the_new_columns_still_splits(campaign_dir):
    """A comparison.csv written before the split is not trusted: the report recomputes it."""
    camp, _ = _campaign()
    old = camp.groupby(["board", "app", "variant", "metric", "source", "profile", "rtos"], dropna=False)
    old.agg(mean_ns=("mean", "mean")).reset_index().assign(x_fastest=1.0, rank=1).to_csv(
        campaign_dir / "comparison.csv", index=False)
    text = render(campaign_dir)
    assert "1,888.5" not in text and "3,358" in text


def test_switch_time_against_number_of_tasks_per_time_scale(tmp_path):
    """A chart per time scale, one line per RTOS over N = 2 and N = 5 ("Also" of issue 33)."""
    (c2, k2), (c5, k5) = _campaign("n2"), _campaign("n5")
    c5["mean"] += 10.0
    pd.concat([c2, c5]).to_csv(tmp_path / "campaign.csv", index=False)
    (tmp_path / "manifest.json").write_text(json.dumps({"captures": k2 + k5, "failed": 0}))
    text = render(tmp_path)
    nt = text[text.index("id='ntasks'"):text.index("id='comparison'")]
    titles = re.findall(r"class='ct'>ctx_switch\.yield by number of tasks, ([^<]+)<", nt)
    assert titles == ["1 ns/insn", "8 ns/insn"]
    tips = set(re.findall(r"data-tip='(\w+), tasks (\d+): ([\d,.]+) ns'", nt))
    assert ("freertos", "5", "429") in tips and ("freertos", "5", "3,368") in tips
    assert ("zephyr", "2", "760") in tips and not any(t[0] == "zephyr" and t[2] == "3,368" for t in tips)


def test_the_headline_metric_is_one_with_instances() -> None:
    """A test without a preferred metric is shown by one that has instances (Thread-Metric's
    memory test listed tm.isr.interval with none and showed "no instances")."""
    import pandas as pd

    from analyzers.report.select import _headline_metric

    rows = pd.DataFrame({"metric": ["tm.isr.interval", "tm.isr.interval", "tm.period", "tm.period"],
                         "rtos": ["threadx", "zephyr", "threadx", "zephyr"], "n": [0, 0, 12, 12]})
    assert _headline_metric("tm_memory", rows) == "tm.period"
    assert _headline_metric("tm_memory", rows.assign(n=0)) == "tm.isr.interval"  # nothing measured


def test_the_comparison_table_names_time_scale_and_tracer(campaign_dir):
    """Its rows for one RTOS at two time scales are not look-alike duplicates (the report's table
    left out the time scale and tracer comparison.csv has)."""
    text = render(campaign_dir)
    sec = text[text.index("<h2 id='comparison'>"):]
    head = re.findall(r"<th class=\"[^\"]*\">([^<]+)</th>", sec[:sec.index("</tr>")])
    assert {"time_scale", "tracer"} <= set(head)
    rows = re.findall(r"<tr>(.*?)</tr>", sec[:sec.index("</table>")])[1:]
    assert len(rows) == len(set(rows))
