"""The user's own intervals and pins (analyzers.user_config): a third-party capture with renamed
channels and its own mark ids cross-validates like crosstrace's bundled captures."""

from __future__ import annotations

import pytest

from analyzers import _synth as S
from analyzers._io import save_trace
from analyzers.campaign import analyze_dirs, load_campaign
from analyzers.sites import Site
from analyzers.user_config import check_selector, parse_config, trace_occurrences, user_intervals
from trace_parsers.errors import AnalysisError
from trace_parsers.model import Channel, Trace

TOML = """
[[interval]]
name = "yield_switch"
start = "mark:40"
end = "mark:41"

[[pin]]
channel = "{a}"
selector = "mark:40"
edge = "both"

[[pin]]
channel = "{b}"
selector = "mark:41"
edge = "both"
"""


def third_party(folder, *, pins=("D3", "D5"), seed=1):
    """A folder as a user's firmware leaves it: its own mark ids (40, 41; no crosstrace site
    table, no marker names), logic channels named D3/D5, a crosstrace.toml, no run.json."""
    sc = S.ctx_switch(n=60, switch_ns=1280, spread_ns=200, seed=seed)
    t = S.to_trace(sc, sites=[Site(40, "ctx.yield"), Site(41, "ctx.switch_in")])
    trace = Trace(t.events, t.meta, tasks=t.tasks, isrs=t.isrs)  # no marker names
    c = S.to_capture(sc, ppm=20, samplerate=500_000_000)
    ren = {"ctx.yield": "D3", "ctx.switch_in": "D5"}
    chans = [Channel(ch.index, ren.get(ch.name, ch.name), ch.initial_level) for ch in c.channels]
    folder.mkdir(parents=True)
    save_trace(trace, folder / "trace.ctev.parquet")
    save_trace(Trace(c.events, c.meta, channels=chans), folder / "logic.ctev.parquet")
    (folder / "crosstrace.toml").write_text(TOML.format(a=pins[0], b=pins[1]))
    return folder


def test_user_configured_capture_cross_validates(tmp_path):
    third_party(tmp_path / "caps" / "mine")
    m = analyze_dirs([tmp_path / "caps"], tmp_path / "out", scheduler="serial", quiet=True)
    (cap,) = m["captures"]
    assert cap["status"] == "ok", cap.get("error")
    xv = load_campaign(tmp_path / "out")["crossval"]
    row = xv[xv["metric"] == "user.yield_switch"].iloc[0]
    assert row["verdict"] == "PASS" and row["n_pairs"] == 60
    assert cap["verdict"] == "PASS"
    camp = load_campaign(tmp_path / "out")["campaign"]
    assert set(camp.loc[camp["metric"] == "user.yield_switch", "source"]) == {"trace", "logic"}


def test_a_wrong_pin_mapping_does_not_pass(tmp_path):
    third_party(tmp_path / "caps" / "swapped", pins=("D5", "D3"))  # the pins the wrong way round
    m = analyze_dirs([tmp_path / "caps"], tmp_path / "out", scheduler="serial", quiet=True)
    xv = load_campaign(tmp_path / "out")["crossval"]
    rows = xv[xv["metric"] == "user.yield_switch"]
    assert len(rows) == 1 and rows.iloc[0]["verdict"] in ("FAIL", "INCOMPLETE")
    assert m["captures"][0]["verdict"] != "PASS"


def test_selectors_find_kernel_events():
    sc = S.isr(n=20, latency_ns=304, duration_ns=150, spread_ns=200, seed=2)
    tr = S.to_trace(sc)
    irq = tr.isrs[0]
    enter = trace_occurrences(tr, f"isr:{irq.name}:enter")
    exit_ = trace_occurrences(tr, f"isr:{irq.number}:exit")
    assert enter.size == exit_.size == 20 and ((exit_ - enter) == 150).all()
    task = tr.tasks[0].name
    assert trace_occurrences(tr, f"task:{task}:in").size > 0
    cfg = parse_config({"interval": [{"name": "isr", "start": f"isr:{irq.name}:enter",
                                      "end": f"isr:{irq.name}:exit"}]})
    st = user_intervals(tr, cfg).summary.stats["user.isr"]
    assert st.n == 20 and st.mean == 150


@pytest.mark.parametrize(
    "bad",
    [
        {"interval": [{"name": "x", "start": "mark:a", "end": "mark:1"}]},
        {"interval": [{"name": "x", "start": "task:foo", "end": "mark:1"}]},
        {"interval": [{"name": "x y", "start": "mark:1", "end": "mark:2"}]},
        {"interval": [{"name": "x", "start": "mark:1"}]},
        {"pin": [{"channel": "D0", "selector": "mark:1", "edge": "up"}]},
        {"intervals": []},
    ],
)
def test_a_bad_configuration_is_a_clear_error(bad):
    with pytest.raises(AnalysisError) as e:
        parse_config(bad, "crosstrace.toml")
    assert e.value.code == "AN_BAD_CONFIG"


def test_a_bad_toml_fails_its_capture_alone(tmp_path):
    third_party(tmp_path / "caps" / "good")
    bad = third_party(tmp_path / "caps" / "bad", seed=2)
    (bad / "crosstrace.toml").write_text("[[interval]\nname=")
    m = analyze_dirs([tmp_path / "caps"], tmp_path / "out", scheduler="serial", quiet=True)
    res = {c["capture"]: c for c in m["captures"]}
    assert res["good"]["status"] == "ok"
    assert res["bad"]["status"] == "failed" and res["bad"]["code"] == "AN_BAD_CONFIG"
    assert check_selector("isr:SysTick:exit") == ("isr", "SysTick", "exit")
