"""`crosstrace compare`: bootstrap intervals and the CI-gate exit code."""

import numpy as np
import pytest

from analyzers.batch import analyze_dirs
from analyzers.cli import main
from analyzers.compare import bootstrap_rel_change, compare

from ._campaign import make_campaign


@pytest.fixture(scope="module")
def two_campaigns(tmp_path_factory):
    base = tmp_path_factory.mktemp("cmp")
    a = analyze_dirs([make_campaign(base / "a", broken=False)], base / "oa", scheduler="serial", quiet=True)
    # B: threadx 10 % slower than in A (1.76 vs 1.6 of FreeRTOS), FreeRTOS unchanged
    b = analyze_dirs(
        [make_campaign(base / "b", slow_factor=1.76, broken=False)],
        base / "ob",
        scheduler="serial",
        quiet=True,
    )
    assert a["failed"] == b["failed"] == 0
    return base / "oa", base / "ob"


def test_bootstrap_interval_covers_the_truth():
    rng = np.random.default_rng(5)
    a, b = rng.normal(100, 10, 400), rng.normal(105, 10, 400)
    point, lo, hi = bootstrap_rel_change(a, b, n_boot=1000)
    assert lo < point < hi and lo < 5 < hi and hi - lo < 6


def test_compare_flags_only_the_slowdown(two_campaigns):
    oa, ob = two_campaigns
    ch = {(c.rtos, c.metric, c.source): c for c in compare(oa, ob, threshold_pct=5)}
    reg = {k for k, c in ch.items() if c.regression}
    assert ("threadx", "ctx_switch.yield", "trace") in reg and (
        "threadx",
        "isr.to_task.latency",
        "logic",
    ) in reg
    assert all(k[0] == "threadx" for k in reg)
    c = ch[("threadx", "ctx_switch.yield", "trace")]
    assert c.ci_low_pct > 5 and c.rel_change_pct == pytest.approx(10, abs=1.5)
    assert not ch[("freertos", "ctx_switch.yield", "trace")].regression


def test_compare_cli_gate(two_campaigns, tmp_path, capsys):
    oa, ob = two_campaigns
    assert main(["compare", str(oa), str(oa)]) == 0
    assert main(["compare", str(oa), str(ob), "--threshold", "5", "-o", str(tmp_path / "c.csv")]) == 1
    assert "REGRESSION" in capsys.readouterr().out and (tmp_path / "c.csv").is_file()
    assert main(["compare", str(oa), str(ob), "--threshold", "50"]) == 0
    assert main(["compare", str(tmp_path), str(ob)]) == 2
