"""`crosstrace compare`: bootstrap intervals and the CI-gate exit code."""

import numpy as np
import pytest

from analyzers.campaign import analyze_dirs
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


@pytest.fixture(scope="module")
def two_time_scales(tmp_path_factory):
    """One test recorded at 1 and at 8 ns per instruction (the same firmware, the same 1000
    instructions): samples within a run differ by < 0.1 %, the runs by 8×."""
    from analyzers import _synth as S

    root = tmp_path_factory.mktemp("scales")
    for run, npi in (("ref", 1), ("board", 8)):
        sc = S.ctx_switch(switch_ns=1000 * npi, spread_ns=npi // 2, seed=npi)
        S.write_capture_folder(root / "cap" / "freertos" / "ctx_switch" / run, sc, run_id=run,
                               trace=S.to_trace(sc), capture=S.to_capture(sc),
                               extra={"time_scale": {"icount_shift": {1: 0, 8: 3}[npi], "ns_per_insn": npi}})
    out = analyze_dirs([root / "cap"], root / "out", scheduler="serial", quiet=True)
    assert out["failed"] == 0
    return root / "out"


def test_compare_a_with_itself_keeps_time_scales_apart(two_time_scales):
    """`compare A A`: Δ = 0, nothing flagged, and the deterministic rows' intervals within ±1 %
    (pooling the two time scales gave ±14–41 %)."""
    ch = compare(two_time_scales, two_time_scales, n_boot=500)
    assert ch and all(c.rel_change_pct == 0 for c in ch)
    assert not any(c.regression or c.improvement for c in ch)
    yields = [c for c in ch if c.metric == "ctx_switch.yield"]
    assert {(c.time_scale, c.source) for c in yields} == {
        (ts, src) for ts in ("1 ns/insn", "8 ns/insn") for src in ("trace", "logic")}
    for c in yields:
        assert -1 < c.ci_low_pct <= 0 <= c.ci_high_pct < 1, c
        assert c.mean_a == pytest.approx(1000 * int(c.time_scale.split()[0]), rel=1e-3)
    assert len({c.tracer for c in yields}) == 1 and "" not in {c.tracer for c in yields}


def test_compare_cli_names_profile_and_time_scale(two_time_scales, capsys):
    assert main(["compare", str(two_time_scales), str(two_time_scales), "--bootstrap", "200"]) == 0
    out = capsys.readouterr().out
    head = out.splitlines()[0]
    assert "time scale" in head and "profile" in head
    lines = [ln for ln in out.splitlines() if ln.startswith("ctx_switch.yield ")]
    assert len(lines) == len(set(lines)) == 4  # no look-alike duplicates
    assert any("8 ns/insn" in ln and "ideal" in ln for ln in lines)


def test_relative_change_of_zero_means_warns_nothing():
    """A metric whose baseline mean is 0 (a ready latency that never waits): Δ = 0 against itself,
    no NumPy RuntimeWarning (pytest turns warnings into errors)."""
    z = np.zeros(20)
    assert bootstrap_rel_change(z, z, n_boot=100) == (0.0, 0.0, 0.0)
    point, lo, hi = bootstrap_rel_change(z, np.ones(20), n_boot=100)
    assert np.isnan(point) and np.isnan(lo) and np.isnan(hi)


def _readme_ab() -> list[str]:
    """The README tour's A/B: its `analyze ... -o out/guard-*` and `compare out/guard-*` lines."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    lines = [ln.split("#")[0].strip() for ln in text.splitlines()]
    return [ln for ln in lines if ln.startswith("crosstrace ") and "out/guard-" in ln]


def test_the_readme_ab_runs_as_printed(tmp_path, monkeypatch, capsys):
    """On a fresh clone (the bundled captures, an empty out/), the README's A/B runs as printed:
    Zephyr's switch without and with the MPU stack guard pair although their variants differ, the
    regression is flagged with the README's numbers, exit 1 as it says."""
    import re
    import shlex
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    cmds = _readme_ab()
    assert [c.split()[1] for c in cmds] == ["analyze", "analyze", "compare"], cmds
    (tmp_path / "captures").symlink_to(root / "captures")
    monkeypatch.chdir(tmp_path)
    for cmd in cmds[:-1]:
        assert main(shlex.split(cmd)[1:]) == 0, cmd
    capsys.readouterr()
    assert main(shlex.split(cmds[-1])[1:]) == 1
    out = capsys.readouterr().out
    row = next(ln for ln in out.splitlines() if ln.startswith("ctx_switch.yield ") and " ideal " in ln)
    assert "n2 → n2-mpu" in row and row.endswith("REGRESSION")
    mean_a, mean_b, change = re.search(r"([\d.]+) +([\d.]+) +([+-][\d.]+) \[", row).groups()
    readme = (root / "README.md").read_text(encoding="utf-8")
    said = re.search(r"\+([\d.]+) % \((\d+) → (\d+) ns at the", readme)
    assert said and (float(said.group(1)), int(said.group(2)), int(said.group(3))) == (
        round(float(change), 1), round(float(mean_a)), round(float(mean_b)))


def test_two_single_captures_pair_across_variants_only(two_time_scales, tmp_path):
    """An A/B of two single captures pairs whatever their variants; two campaigns pair by variant,
    and two single captures at different time scales never pair."""
    one = two_time_scales / "captures"
    ref, board = next(one.rglob("ref")), next(one.rglob("board"))
    assert compare(ref, board, n_boot=50) == []  # 1 vs 8 ns/insn: nothing in common
    import json
    import shutil

    other = tmp_path / "ref"
    shutil.copytree(ref, other)
    res = json.loads((other / "result.json").read_text())
    (other / "result.json").write_text(json.dumps({**res, "variant": "mpu"}))
    ch = compare(ref, other, n_boot=50)
    assert ch and all(c.variant_b == "mpu" and c.rel_change_pct == 0 for c in ch)
