"""overhead.csv pairs each traced build with the untraced build of the same configuration, per tracer."""

from __future__ import annotations

import pandas as pd

from analyzers.campaign.tables import build_config, overhead_table

# Zephyr's ctx_switch.yield at the pins (instructions): the committed campaign's figures
RUNS = {"n2-untraced": (120.0, ""), "n2-mpu-untraced": (237.0, ""), "n2": (760.0, "systemview"),
        "n5": (787.0, "systemview"), "n2-mpu": (877.0, "systemview"), "n2-ctf": (2341.0, "ctf")}


def _campaign() -> tuple[pd.DataFrame, list[dict]]:
    rows, caps = [], []
    for variant, (mean, tracer) in RUNS.items():
        cap = f"qemu_netduinoplus2/zephyr/ctx_switch-{variant}/ref"
        rows.append({"capture": cap, "board": "qemu_netduinoplus2", "rtos": "zephyr", "app": "ctx_switch",
                     "variant": variant, "metric": "ctx_switch.yield", "source": "logic", "profile": "ideal",
                     "kind": "distribution", "mean": mean, "core": -1})
        caps.append({"capture": cap, "status": "ok",
                     "sources": {"trace": {"format": tracer}} if tracer else {}})
    return pd.DataFrame(rows), caps


def test_build_config_removes_tracing_tokens_only() -> None:
    assert build_config("n2-mpu-untraced", False) == "n2-mpu"
    assert build_config("n2-ctf", True) == "n2"
    assert build_config("untraced", False) == ""
    assert build_config("n2-mpu", True) == "n2-mpu"


def test_each_traced_build_gets_its_own_baseline() -> None:
    ov = overhead_table(*_campaign()).set_index(["config", "tracer"])
    assert set(ov.index) == {("n2", "systemview"), ("n2", "ctf"), ("n2-mpu", "systemview")}
    assert ov.loc[("n2", "systemview"), "overhead_ns"] == 760.0 - 120.0
    assert ov.loc[("n2", "ctf"), "overhead_ns"] == 2341.0 - 120.0
    assert ov.loc[("n2-mpu", "systemview"), "overhead_ns"] == 877.0 - 237.0
    # no untraced n5 build: no row, rather than a baseline from another configuration
    assert "n5" not in ov.index.get_level_values("config")


def test_averaging_across_variants_would_be_caught() -> None:
    """The old table averaged every traced variant against every untraced one (1,119 vs 178.5)."""
    camp, caps = _campaign()
    camp["variant"] = ""  # what the old grouping effectively saw
    ov = overhead_table(camp, caps)
    assert not (ov["overhead_ns"] == 760.0 - 120.0).any()
