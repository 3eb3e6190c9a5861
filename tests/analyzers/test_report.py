"""`crosstrace report`: one self-contained HTML file whose first screen answers the question."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from analyzers.campaign import analyze_dirs, load_campaign
from analyzers.cli import main
from analyzers.report import render

from ._campaign import make_campaign


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = make_campaign(tmp_path_factory.mktemp("captures"))
    out = root.parent / "out"
    analyze_dirs([root], out, scheduler="serial", quiet=True)
    html_path = root.parent / "report.html"
    assert main(["report", str(out), "-o", str(html_path)]) == 0
    return out, html_path


def _first_screen(text):
    """The answer section (what the page shows before any detail)."""
    return text[text.index("<section id='answer'>") : text.index("</section>")]


def test_report_is_self_contained_and_has_the_key_numbers(report):
    out, path = report
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert not re.search(r"""(src|href)=['"](?!data:|#)""", text)  # nothing loaded from elsewhere
    assert not re.search(r"@import|url\(|https?://(?!www\.w3\.org/2000/svg)", text)
    assert text.count("<svg class='chart'") >= 12 and text.count("data-tip=") >= 100
    d = load_campaign(out)
    for m in ("ctx_switch.yield", "isr.to_task.latency", "fft.duration", "periodic.fast.period"):
        assert m in text
    comp = d["comparison"]
    row = comp[(comp.metric == "ctx_switch.yield") & (comp.source == "trace") & (comp.rtos == "threadx")
               & (comp.variant == "")].iloc[0]
    assert f"{row.mean_ns:,.1f}" in text and f"{row.x_fastest:.4g}" in text  # the full comparison table
    assert "Context switch per number of tasks" in text and ">N=2<" in text
    assert "synthetic" in text  # provenance: firmware revision / config
    assert "qemu_netduinoplus2/freertos/broken/r1" in text  # the failed capture is listed


def test_first_screen_answers_which_rtos_is_faster(report):
    out, path = report
    first = _first_screen(path.read_text())
    comp = load_campaign(out)["comparison"]
    ctx = comp[(comp.metric == "ctx_switch.yield") & (comp.variant == "")]
    fastest = ctx.loc[ctx.mean_ns.idxmin(), "rtos"]
    m = re.search(r"<b>(\w+)</b> is fastest at <code>ctx_switch\.yield</code>: <b>([\d.,]+) ns</b>", first)
    assert m and m.group(1) == fastest == "freertos"
    ratio = re.search(r"<b>threadx</b> [\d.,]+ ns .*?<b>([\d.]+)×</b> as long", first)
    xs = ctx[ctx.rtos == "threadx"].x_fastest
    assert ratio and any(abs(float(ratio.group(1)) - x) < 0.006 for x in xs)
    assert "Do trace and pins agree? Yes." in first
    assert first.count("<svg class='chart'") >= 4  # one comparison chart per test
    assert "cycles" in first and "µs" in first


def _new_schema(out, tmp_path, *, control_verdict="FAIL", real_fail=True):
    """The campaign as the cross-validation rewrite writes it: raw/calibrated Δ, calibration source,
    five verdicts, a negative control, a time scale and the kernel-vs-pin table."""
    new = tmp_path / "out"
    shutil.copytree(out, new)
    xv = pd.read_parquet(new / "crossval.parquet")
    xv["calibration_source"] = "declared:run.json"
    xv["first_unmatched_trace_ns"] = float("nan")
    caps = sorted(xv["capture"].unique())
    control = next(c for c in caps if "isr_latency" in c)
    i_fail = xv.index[(xv["capture"] != control)][0]
    i_inc = xv.index[(xv["capture"] != control)][1]
    if real_fail:
        xv.loc[i_fail, ["verdict", "raw_rel_diff_pct", "rel_diff_pct"]] = ["FAIL", 7.5, 6.25]
    xv.loc[i_inc, ["verdict", "unmatched_trace", "first_unmatched_trace_ns"]] = ["INCOMPLETE", 3, 123456.0]
    ic = xv.index[xv["capture"] == control]
    xv.loc[ic[0], ["verdict", "raw_rel_diff_pct"]] = ["FAIL", -41.5]
    xv.to_parquet(new / "crossval.parquet")
    man = json.loads((new / "manifest.json").read_text())
    for c in man["captures"]:
        c["time_scale"] = {"icount_shift": 0, "ns_per_insn": 1.0} if c.get("status") == "ok" else None
        if c["capture"] == control:
            c.update(verdict=control_verdict, expected_verdict="FAIL",
                     negative_control={"description": "ISR pin moved after the trace event"})
    (new / "manifest.json").write_text(json.dumps(man))
    pd.DataFrame([{"rtos": "freertos", "capture": caps[0], "kernel_event": "ISR_ENTER", "site": "isr.enter",
                   "n": 100, "mean_ns": 412.0, "std_ns": 3.0, "min_ns": 405.0, "max_ns": 431.0}]
                 ).to_csv(new / "kernel_vs_pin.csv", index=False)
    return new, xv, control


def _card(text, verdict):
    return int(re.search(rf"<div class='card {verdict}'><b>(\d+)</b>{verdict}</div>", text).group(1))


def test_agreement_summary_counts_failures_and_negative_controls(report, tmp_path):
    out, _ = report
    new, xv, control = _new_schema(out, tmp_path)
    text = render(new)
    first = _first_screen(text)
    real = xv[xv["capture"] != control]
    for v in ("PASS", "FAIL", "INCOMPLETE", "UNRESOLVED"):
        assert _card(first, v) == int((real["verdict"] == v).sum())
    assert _card(first, "FAIL") == 1  # the control's FAIL is not counted as a failure
    assert "Do trace and pins agree? No." in first
    assert "raw Δ +7.50 %" in first and "calibrated Δ +6.25 %" in first
    assert f"{control}: expected failure" in first and "raw Δ -41.50 %" in first
    assert "1/1</b>controls failed as expected" in first
    assert "insn" in first  # instructions under QEMU icount, from time_scale
    assert "declared:run.json" in text and "123,456" in text  # calibration source, first unmatched
    assert "How late the RTOS stamps its own events" in text and "412" in text


def test_a_negative_control_that_passes_is_a_failure(report, tmp_path):
    out, _ = report
    new, _, control = _new_schema(out, tmp_path, control_verdict="PASS", real_fail=False)
    first = _first_screen(render(new))
    assert "did NOT fail as expected (PASS)" in first and "0/1</b>controls" in first
    assert "Do trace and pins agree? No." in first


def test_all_pass_with_a_control_failing_as_built_agrees(report, tmp_path):
    out, _ = report
    new, _, control = _new_schema(out, tmp_path, real_fail=False)
    xv = pd.read_parquet(new / "crossval.parquet")
    xv.loc[(xv["capture"] != control) & (xv["verdict"] == "INCOMPLETE"), "verdict"] = "PASS"
    xv.to_parquet(new / "crossval.parquet")
    first = _first_screen(render(new))
    assert "Do trace and pins agree? Yes." in first and "expected failure" in first


NEW_XV = ("raw_rel_diff_pct", "calibration_source", "first_unmatched_trace_ns", "first_unmatched_logic_ns",
          "reason", "quantum_pct")


def test_old_campaigns_render_without_the_new_columns(report, tmp_path):
    """A campaign written before the cross-validation rewrite: no new columns, files or keys."""
    out, _ = report
    old = tmp_path / "old"
    shutil.copytree(out, old)
    for f in old.glob("kernel_vs_pin.*"):
        f.unlink()
    xv = pd.read_parquet(old / "crossval.parquet")
    xv.drop(columns=[c for c in NEW_XV if c in xv.columns]).to_parquet(old / "crossval.parquet")
    man = json.loads((old / "manifest.json").read_text())
    for c in man["captures"]:
        for k in ("expected_verdict", "negative_control", "time_scale", "expectation", "problems"):
            c.pop(k, None)
    (old / "manifest.json").write_text(json.dumps(man))
    for rj in (old / "captures").rglob("result.json"):
        rj.unlink()
    text = render(old)
    assert "How late the RTOS stamps its own events" not in text  # no kernel_vs_pin table: no section
    assert "Negative controls" not in text and "Do trace and pins agree? Yes." in text
    assert "raw Δ" not in _first_screen(text)


def _export_windows(text):
    return [(c, int(a), int(b)) for c, a, b in
            re.findall(r"crosstrace export (\S+) --perfetto \S+ --window (\d+):(\d+)", text)]


def test_an_outlier_links_to_its_export_window(report, tmp_path):
    out, _ = report
    new = tmp_path / "o"
    shutil.copytree(out, new)
    cid = "qemu_netduinoplus2/threadx/ctx_switch/r1"
    p = new / "captures" / cid / "instances.parquet"
    ins = pd.read_parquet(p)
    k = ins.index[(ins["metric"] == "ctx_switch.yield") & (ins["source"] == "trace")][40]
    ins.loc[k, "value"] = 50 * ins.loc[k, "value"]
    ins.to_parquet(p)
    before = {w for w in _export_windows(render(out)) if cid in w[0]}
    wins = {w for w in _export_windows(render(new)) if cid in w[0]} - before
    start = int(ins.loc[k, "start_ts"])
    assert any(a < start < b for _, a, b in wins), wins
    assert all((new.parent / w[0]).is_dir() or Path(w[0]).is_dir() for w in wins)  # the capture folder


def test_a_failure_links_to_the_window_of_its_worst_instance(report, tmp_path):
    out, _ = report
    new, xv, control = _new_schema(out, tmp_path)
    row = xv[(xv["verdict"] == "FAIL") & (xv["capture"] != control)].iloc[0]
    text = render(new)
    assert "The time window of each failure" in _first_screen(text)
    wins = [w for w in _export_windows(text) if w[0].endswith(row["capture"])]
    assert wins and "largest |Δ|" in text


def test_report_missing_campaign(tmp_path, capsys):
    assert main(["report", str(tmp_path), "-o", str(tmp_path / "r.html")]) == 2
    assert "manifest.json" in capsys.readouterr().err


def test_one_total_of_comparisons(report, tmp_path):
    """The first screen's total and the agreement table's add up: negative-control rows are
    counted apart in both places (issue 33 item 3: 268 at the top, 276 below)."""
    out, _ = report
    new, xv, control = _new_schema(out, tmp_path)
    text = render(new)
    top = int(re.search(r"of (\d+) metric comparisons", _first_screen(text)).group(1))
    below = re.search(r"(\d+) comparisons counted above, and (\d+) of negative controls", text)
    assert below and int(below.group(1)) == top
    assert top + int(below.group(2)) == len(xv)
    assert int(below.group(2)) == int((xv["capture"] == control).sum())


def _reads_of_instances(monkeypatch, out):
    """How many times rendering ``out`` reads each capture's instances.parquet."""
    import pyarrow.parquet as pq

    reads: dict[str, int] = {}
    real_table, real_pd = pq.read_table, pd.read_parquet

    def count(path, *a, **k):
        if str(path).endswith("instances.parquet"):
            reads[str(path)] = reads.get(str(path), 0) + 1
        return (real_table if count.arrow else real_pd)(path, *a, **k)

    def arrow(path, *a, **k):
        count.arrow = True
        return count(path, *a, **k)

    def pandas(path, *a, **k):
        count.arrow = False
        return count(path, *a, **k)

    monkeypatch.setattr(pq, "read_table", arrow)
    monkeypatch.setattr(pd, "read_parquet", pandas)
    render(out)
    return reads


def test_each_instances_file_is_read_once(report, monkeypatch):
    """The report reads every capture's instances once (``campaign.tables.read_instances``), however
    many sections show them; reading them again for a section fails this."""
    out, _ = report
    files = {str(p) for p in out.rglob("instances.parquet")}
    reads = _reads_of_instances(monkeypatch, out)
    assert set(reads) == files and set(reads.values()) == {1}
    from analyzers.report import select as S

    real = S.outliers
    monkeypatch.setattr(S, "outliers", lambda inst, *a, **k: real(
        dict(__import__("analyzers.campaign.tables", fromlist=["x"]).iter_instances(out)), *a, **k))
    assert set(_reads_of_instances(monkeypatch, out).values()) == {2}  # injected: a second read
