"""Every metric id the analyzers produce is registered, with its unit and sources."""

from __future__ import annotations

import pytest

from analyzers.campaign import analyze_dirs, load_campaign
from analyzers.metrics.registry import METRICS, cross_validated, lookup

from ._campaign import make_campaign


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    root = make_campaign(tmp_path_factory.mktemp("reg") / "caps", broken=False)
    out = root.parent / "out"
    analyze_dirs([root], out, scheduler="serial", quiet=True)
    return load_campaign(out)


def _check(rows):
    unknown, wrong = [], []
    for metric, unit, source in rows:
        d = lookup(metric)
        if d is None:
            unknown.append(metric)
        elif source != "firmware" and (source not in d.sources or unit not in (d.unit, d.tick_unit)):
            wrong.append((metric, unit, source, d.id))
    return unknown, wrong


def test_every_campaign_metric_is_registered(campaign):
    camp = campaign["campaign"]
    rows = set(zip(camp["metric"], camp["unit"], camp["source"]))
    unknown, wrong = _check(r for r in rows if r[2] != "firmware")
    assert not unknown and not wrong, (unknown[:10], wrong[:10])
    assert len(rows) > 40  # site, load and kernel metrics all present


def test_every_corpus_kernel_metric_is_registered():
    from analyzers.run import run_analyzers
    from analyzers.sites import load_sites
    from tests.analyzers.test_kernel_metrics import RECORDINGS, _open

    for key in RECORDINGS:
        res = run_analyzers(_open(key), load_sites(), {})
        rows = [(m, res.units[m], "trace") for m in res.stats] + [
            (m, u, "trace") for m, (_, u) in res.scalars.items()
        ]
        unknown, wrong = _check(rows)
        assert not unknown and not wrong, (key, unknown[:10], wrong[:10])


def test_cross_validated_metrics_are_the_ones_compared(campaign):
    xv = campaign["crossval"]
    assert len(xv)
    for m in set(xv["metric"]):
        d = lookup(m)
        assert d is not None and (d.cross_validated or d.family == "site"), m
    assert cross_validated("ctx_switch.yield") and not cross_validated("task.a.exec_time")


def test_the_check_fails_on_an_unregistered_or_mislabelled_metric():
    assert _check([("made.up.metric", "ns", "trace")])[0] == ["made.up.metric"]
    assert _check([("task.a.exec_time", "pct", "trace")])[1]
    assert _check([("task.a.exec_time", "ns", "logic")])[1]
    ids = [d.id for d in METRICS]
    assert len(ids) == len(set(ids))


def test_every_golden_metric_is_registered():
    import json
    from pathlib import Path

    golden = Path(__file__).resolve().parents[1] / "golden"
    rows = set()
    for p in golden.rglob("metrics.json"):
        for key, st in json.loads(p.read_text())["metrics"].items():
            metric, source, _ = key.split("|")
            rows.add((metric, st["unit"], source))
    if not rows:
        pytest.skip("no golden files")
    unknown, wrong = _check(r for r in rows if r[2] != "firmware")
    assert not unknown and not wrong, (sorted(unknown)[:10], wrong[:10])
