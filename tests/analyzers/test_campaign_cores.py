"""Per-core rows of the campaign table (issue 14): on a multi-core recording (an ESP32
procpu/appcpu pair, an ESP32 multi-core SystemView file) every kernel metric and the CPU load get
one row per core (``core`` = N) besides the merged row (``core`` = -1); single-core recordings
keep one row. The per-core statistics are checked against the capture's own instance table,
aggregated here with pandas (not the analyzer's code)."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from analyzers.campaign.capture import analyze_capture
from analyzers.campaign.discover import discover_all
from analyzers.campaign.tables import ALL_CORES, comparison_table, load_campaign, merged_rows, write_campaign
from analyzers.metrics.cpu_load import cpu_load
from analyzers.metrics.kernel import kernel_metrics
from tests.conftest import corpus_dir
from trace_parsers import open_trace, read_systemview

PAIR = ["lilu_esp32_freertos_load_s1_procpu.SVDat", "lilu_esp32_freertos_load_s1_appcpu.SVDat"]
MCORE = "espidf_esp32_heaplog_mcore_espext_2024.svdat"
SINGLE = "gutya_stm32f746_freertos_raw.SVdat"


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory) -> dict:
    rec = tmp_path_factory.mktemp("cores") / "rec"
    rec.mkdir()
    for f in [*PAIR, MCORE, SINGLE]:
        shutil.copy(corpus_dir("systemview") / f, rec / f)
    out = rec.parent / "out"
    results = {}
    for cid, path in discover_all([rec]).captures:
        res = analyze_capture(path, cid, out)
        assert res["status"] == "ok", res.get("error")
        results[cid.rsplit("/", 1)[1]] = res
    write_campaign(out, list(results.values()))
    return {"out": out, "results": results, "campaign": load_campaign(out)["campaign"]}


def _rows(analyzed: dict, name: str) -> pd.DataFrame:
    return pd.DataFrame(analyzed["results"][name]["metrics"])


@pytest.mark.parametrize("name", ["lilu_esp32_freertos_load_s1", MCORE.split(".")[0]])
def test_kernel_distributions_per_core_from_the_instances(analyzed: dict, name: str) -> None:
    rows = _rows(analyzed, name)
    per_core = rows[(rows["kind"] == "distribution") & (rows["core"] != ALL_CORES)]
    assert set(per_core["core"]) == {0, 1}
    ins = pd.read_parquet(analyzed["out"] / "captures" / "rec" / name / "instances.parquet")
    ins = ins[(ins["source"] == "trace") & (ins["core"] >= 0)]
    ref = ins.groupby(["metric", "core"])["value"].agg(
        n="size", mean="mean", min="min", max="max", p50=lambda v: float(np.percentile(v, 50)))
    got = per_core.set_index(["metric", "core"])[["n", "mean", "min", "max", "p50"]].sort_index()
    assert got.index.tolist() == ref.index.tolist()
    np.testing.assert_allclose(got.to_numpy(float), ref.to_numpy(float), rtol=1e-12)
    merged = rows[(rows["kind"] == "distribution") & (rows["core"] == ALL_CORES)].set_index("metric")["n"]
    for m, n in per_core.groupby("metric")["n"].sum().items():  # every instance is on one core
        assert n == merged[m], m
    assert per_core["excluded"].isna().all()  # exclusions are not attributed to a core


def test_esp32_pair_numbers(analyzed: dict) -> None:
    rows = _rows(analyzed, "lilu_esp32_freertos_load_s1").set_index(["metric", "core"])
    systick = rows.loc["isr.SysTick.duration"]
    assert systick.loc[[-1, 0, 1], "n"].tolist() == [310, 156, 154]
    # CPU load and switch counts: the analyzer's per-core scalars, as rows of their merged id
    trace = read_systemview([corpus_dir("systemview") / f for f in PAIR])
    load = cpu_load(trace).summary.scalars
    for core, key in ((-1, "cpu.load.total"), (0, "cpu.load.core0.total"), (1, "cpu.load.core1.total")):
        assert rows.loc[("cpu.load.total", core), "mean"] == load[key][0]
    sw = kernel_metrics(trace).summary.scalars
    counts = [rows.loc[("ctx_switch.count", c), "mean"] for c in (-1, 0, 1)]
    assert counts == [sw["ctx_switch.count"][0], sw["ctx_switch.count.core0"][0],
                      sw["ctx_switch.count.core1"][0]] == [1129, 898, 231]  # = test_kernel_metrics' loop
    assert not any(m.startswith(("cpu.load.core", "ctx_switch.count.core")) for m, _ in rows.index)


def test_single_core_recording_has_only_merged_rows(analyzed: dict) -> None:
    rows = _rows(analyzed, SINGLE.split(".")[0])
    assert len(rows) and (rows["core"] == ALL_CORES).all()
    assert open_trace(corpus_dir("systemview") / SINGLE).meta.cores == 1


def test_campaign_table_and_comparison(analyzed: dict) -> None:
    camp = analyzed["campaign"]
    assert "core" in camp.columns and set(camp["core"]) == {-1, 0, 1}
    assert len(merged_rows(camp)) == (camp["core"] == -1).sum()
    comp = comparison_table(camp)  # one RTOS mean per metric: the merged rows only
    st = comp[(comp["metric"] == "isr.SysTick.duration") & (comp["app"] == "lilu_esp32_freertos_load_s1")]
    assert st["n"].tolist() == [310]
    assert merged_rows(camp.drop(columns="core")).equals(camp.drop(columns="core"))  # older tables
