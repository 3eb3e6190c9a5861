"""Campaign tables from the per-capture results: campaign, cross-validation, comparison, overhead."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .identity import _json_default, code_hash
from .plan import BOARD_CPU_HZ


def comparison_table(campaign: Any) -> Any:
    """Seed-style comparison: per board, app, variant, metric and source, every RTOS's mean as a
    multiple of the fastest and of the slowest RTOS, in µs and CPU cycles (pandas DataFrame)."""
    import pandas as pd

    df = campaign[(campaign["unit"] == "ns") & (campaign["kind"] != "scalar")]
    if df.empty:
        return pd.DataFrame(columns=["board", "app", "variant", "metric", "source", "rtos", "mean_ns"])
    keys = ["board", "app", "variant", "metric", "source", "profile"]
    g = df.groupby(keys + ["rtos"], dropna=False).agg(
        mean_ns=("mean", "mean"), p99_ns=("p99", "mean"), runs=("capture", "nunique"), n=("n", "sum")
    )
    g = g.reset_index()
    grp = g.groupby(keys, dropna=False)["mean_ns"]
    g["x_fastest"] = g["mean_ns"] / grp.transform("min")
    g["x_slowest"] = g["mean_ns"] / grp.transform("max")
    g["mean_us"] = g["mean_ns"] / 1e3
    hz = g["board"].map(BOARD_CPU_HZ)
    g["cpu_hz"] = hz
    g["mean_cycles"] = g["mean_ns"] * hz / 1e9
    g["rank"] = grp.rank(method="min").astype("Int64")
    return g.sort_values(keys + ["rank"]).reset_index(drop=True)


def overhead_table(campaign: Any, captures: list[dict[str, Any]]) -> Any:
    """Instrumentation overhead: the pin-measured mean of a traced build minus that of an untraced
    build of the same board, RTOS and app (untraced = a capture folder without a trace)."""
    import pandas as pd

    traced = {
        c["capture"]: bool(c.get("sources", {}).get("trace")) for c in captures if c.get("status") == "ok"
    }
    df = campaign[(campaign["source"] == "logic") & (campaign["kind"] == "distribution")].copy()
    if df.empty:
        return pd.DataFrame()
    df["traced"] = df["capture"].map(traced)
    keys = ["board", "rtos", "app", "metric", "profile"]
    a = df[df["traced"] == True].groupby(keys)["mean"].mean().rename("traced_ns")  # noqa: E712
    b = df[df["traced"] == False].groupby(keys)["mean"].mean().rename("untraced_ns")  # noqa: E712
    out = pd.concat([a, b], axis=1, join="inner").reset_index()
    out["overhead_ns"] = out["traced_ns"] - out["untraced_ns"]
    out["overhead_pct"] = 100.0 * out["overhead_ns"] / out["untraced_ns"]
    return out


def write_campaign(
    out_dir: Path, results: list[dict[str, Any]], skipped: Sequence[dict[str, str]] = ()
) -> dict[str, Any]:
    """Assemble and write the campaign tables from the per-capture results (``skipped``: what
    discovery looked at and found to be no capture, listed in the manifest)."""
    import pandas as pd

    ok = [r for r in results if r.get("status") == "ok"]
    campaign = pd.DataFrame([row for r in ok for row in r["metrics"]])
    xv = pd.DataFrame([row for r in ok for row in r["crossval"]])
    al = pd.DataFrame([row for r in ok for row in r["alignment"]])
    counts = pd.DataFrame([row for r in ok for row in r.get("crossval_counts", [])])
    kernel = pd.DataFrame([row for r in ok for row in r.get("kernel_timing", [])])
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, df in (
        ("campaign", campaign),
        ("crossval", xv),
        ("alignment", al),
        ("crossval_counts", counts),
        ("kernel_vs_pin", kernel),
    ):
        df.to_csv(out_dir / f"{name}.csv", index=False)
        if not df.empty:
            df.to_parquet(out_dir / f"{name}.parquet", index=False)
    if not campaign.empty:
        comp = comparison_table(campaign)
        comp.to_csv(out_dir / "comparison.csv", index=False)
        comp.to_parquet(out_dir / "comparison.parquet", index=False)
        ov = overhead_table(campaign, ok)
        ov.to_csv(out_dir / "overhead.csv", index=False)
    manifest = {
        "code_hash": code_hash(),
        "captures": [
            {
                k: r.get(k)
                for k in (
                    "capture",
                    "folder",
                    "status",
                    "error",
                    "code",
                    "board",
                    "rtos",
                    "app",
                    "variant",
                    "run_id",
                    "verdict",
                    "problems",
                    "expected_verdict",
                    "expectation",
                    "negative_control",
                    "time_scale",
                    "calibration",
                    "notes",
                    "provenance",
                    "sources",
                    "diagnostics",
                    "missing_sources",
                    "tick_hz_assumed",
                    "input_hash",
                    "seconds",
                    "cached",
                )
            }
            for r in results
        ],
        "failed": sum(r.get("status") != "ok" for r in results),
        "skipped": list(skipped),
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1, default=_json_default))
    return manifest


def load_campaign(out_dir: Path) -> dict[str, Any]:
    """The tables and manifest written by :func:`write_campaign` (pandas DataFrames)."""
    import pandas as pd

    out_dir = Path(out_dir)
    mf = out_dir / "manifest.json"
    if not mf.is_file():
        raise FileNotFoundError(
            f"{out_dir}: no manifest.json (run `crosstrace analyze ... -o {out_dir}` first)"
        )
    d: dict[str, Any] = {"manifest": json.loads(mf.read_text())}
    names = ("campaign", "crossval", "alignment", "comparison", "crossval_counts", "overhead")
    names += ("kernel_vs_pin",)
    for name in names:
        p, c = out_dir / f"{name}.parquet", out_dir / f"{name}.csv"
        if p.is_file():
            d[name] = pd.read_parquet(p)
        elif c.is_file() and c.stat().st_size > 1:
            try:
                d[name] = pd.read_csv(c)
            except pd.errors.EmptyDataError:
                d[name] = pd.DataFrame()
        else:
            d[name] = pd.DataFrame()
    return d


def iter_instances(out_dir: Path) -> Iterable[tuple[str, Any]]:
    """``(capture_id, instances DataFrame)`` for every analyzed capture of a campaign folder."""
    import pandas as pd

    for p in sorted((Path(out_dir) / "captures").rglob("instances.parquet")):
        yield p.parent.relative_to(Path(out_dir) / "captures").as_posix(), pd.read_parquet(p)
