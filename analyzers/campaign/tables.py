"""Campaign tables from the per-capture results: campaign, cross-validation, comparison, overhead.

The campaign table has one row per capture, metric, source, profile and ``core``: ``core`` is
:data:`ALL_CORES` (-1) for the row over the whole recording (all cores merged; the only row of a
single-core recording, a logic capture or the firmware's own statistics) and the core index for
the per-core rows of a multi-core recording (ESP32 procpu/appcpu pairs, SystemView multi-core
files, TraceX SMP), which its kernel metrics and CPU load get in addition to the merged row.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .identity import _json_default, code_hash
from .plan import BOARD_CPU_HZ

#: ``core`` of a campaign row over the whole recording (every core merged)
ALL_CORES = -1


def _split_core(metric: str) -> tuple[str, int]:
    """``(metric id without its core, core)`` of a per-core metric id (``cpu.load.core1.total`` ->
    ``("cpu.load.total", 1)``), ``(metric, ALL_CORES)`` for any other id. Only ids registered with
    a ``core<core>`` part are split (a task named ``core1`` stays a task).

    >>> _split_core("cpu.load.core1.IDLE1"), _split_core("ctx_switch.count.core0")
    (('cpu.load.IDLE1', 1), ('ctx_switch.count', 0))
    >>> _split_core("task.core1.exec_time")
    ('task.core1.exec_time', -1)
    """
    from ..metrics.registry import lookup

    d = lookup(metric)
    if d is None or "core<core>" not in d.id:
        return metric, ALL_CORES
    head, _, tail = d.id.partition("core<core>")
    m = re.fullmatch(re.escape(head) + r"core(\d+)" + (r"(\..+)" if tail else ""), metric)
    if m is None:  # pragma: no cover - lookup matched the same template
        return metric, ALL_CORES
    return head.rstrip(".") + (m.group(2) if tail else ""), int(m.group(1))


def stat_rows(
    ident: dict[str, Any], source: str, profile: str, res: Any, *, cores: int = 1
) -> list[dict[str, Any]]:
    """The campaign rows of one analyzed source (``res``: :class:`analyzers.run.SourceResult`).

    Every distribution and scalar gets its merged row (``core`` = :data:`ALL_CORES`). On a
    recording of ``cores`` > 1, every distribution whose instances carry a core (the kernel
    metrics) also gets one row per core from those instances, and per-core scalars (CPU load,
    switch counts: ``<id>.core<N>...``) become rows of their merged id with ``core`` = N. Exclusions
    are not attributed to a core: ``excluded``/``unmatched`` of a per-core row are null."""
    rows = []
    excluded: dict[str, int] = {}
    unmatched: dict[str, int] = {}
    for e in res.drop_log:  # one pass over the drop log (it has a row per gap and metric)
        into = unmatched if e.reason == "no_end_event" else excluded
        into[e.metric] = into.get(e.metric, 0) + e.count
    for m, st in sorted(res.stats.items()):
        rows.append({
            **ident, "metric": m, "source": source, "profile": profile, "core": ALL_CORES,
            "kind": "distribution", "unit": res.units.get(m, "ns"), **st.as_dict(),
            "excluded": excluded.get(m, 0), "unmatched": unmatched.get(m, 0),
        })
    if cores > 1:
        rows += _core_distribution_rows(ident, source, profile, res)
    for m, (v, unit) in sorted(res.scalars.items()):
        metric, core = _split_core(m) if cores > 1 else (m, ALL_CORES)
        rows.append({
            **ident, "metric": metric, "source": source, "profile": profile, "core": core,
            "kind": "scalar", "unit": unit, "n": 1, "mean": v, "std": 0.0, "min": v, "p1": v, "p50": v,
            "p99": v, "max": v, "excluded": 0, "unmatched": 0,
        })
    return rows


def _core_distribution_rows(
    ident: dict[str, Any], source: str, profile: str, res: Any
) -> list[dict[str, Any]]:
    """One row per metric and core from the per-instance table's ``core`` column."""
    import numpy as np

    from ..metrics.spill import is_spilled
    from ..metrics.stats import summarize

    t = res.table
    if is_spilled(t):
        return _spilled_core_rows(ident, source, profile, res)
    if t is None or "core" not in t.column_names or not t.num_rows:
        return []
    enc = t.column("metric").combine_chunks().dictionary_encode()  # codes, not one str per row
    code_of = {m: i for i, m in enumerate(enc.dictionary.to_pylist())}
    metric = enc.indices.to_numpy(zero_copy_only=False)
    core = t.column("core").to_numpy()
    value = t.column("value").to_numpy()
    rows = []
    for m in sorted(res.stats):
        sel = (metric == code_of.get(m, -1)) & (core >= 0)
        for c in np.unique(core[sel]).tolist():
            st = summarize(value[sel & (core == c)])
            rows.append({
                **ident, "metric": m, "source": source, "profile": profile, "core": int(c),
                "kind": "distribution", "unit": res.units.get(m, "ns"),
                **st.as_dict(), "excluded": None, "unmatched": None,
            })
    return rows


def _spilled_core_rows(ident: dict[str, Any], source: str, profile: str, res: Any) -> list[dict[str, Any]]:
    """:func:`_core_distribution_rows` of a spilled table: from the values per metric and core
    kept while spilling (the same values, in table order), summarized from disk a block at a
    time (``metrics.disk_stats``)."""
    t = res.table
    rows = []
    for m in sorted(res.stats):
        for c in sorted(c for mm, c in t.core_values if mm == m):
            st = t.core_stats(m, c)
            rows.append({
                **ident, "metric": m, "source": source, "profile": profile, "core": int(c),
                "kind": "distribution", "unit": res.units.get(m, "ns"),
                **st.as_dict(), "excluded": None, "unmatched": None,
            })
    return rows


def merged_rows(campaign: Any) -> Any:
    """The campaign rows over whole recordings (one per capture, metric, source and profile), as
    before per-core rows existed; campaign tables without a ``core`` column are returned as is."""
    if campaign is None or campaign.empty or "core" not in campaign.columns:
        return campaign
    return campaign[campaign["core"].fillna(ALL_CORES) == ALL_CORES]


#: ``time_scale`` of a recording made in real time (hardware, a user's own recording)
REAL_TIME = "real time"


def time_scale_label(ts: Any) -> str:
    """The time scale a capture's numbers are on: ``"8 ns/insn"`` for a virtual-lab run (QEMU
    icount: one instruction every 8 ns), :data:`REAL_TIME` for anything recorded in real time.

    >>> time_scale_label({"icount_shift": 3, "ns_per_insn": 8}), time_scale_label(None)
    ('8 ns/insn', 'real time')
    """
    npi = (ts or {}).get("ns_per_insn") if isinstance(ts, dict) else None
    if not npi:
        return REAL_TIME
    return f"{float(npi):g} ns/insn"


def capture_axes(captures: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per capture id what must never be pooled across: its time scale (label and ns per
    instruction, NaN in real time) and its tracer (the trace's format, ``"none"`` untraced)."""
    out = {}
    for c in captures:
        ts = c.get("time_scale")
        npi = (ts or {}).get("ns_per_insn") if isinstance(ts, dict) else None
        fmt = ((c.get("sources") or {}).get("trace") or {}).get("format") or "none"
        out[str(c.get("capture"))] = {"time_scale": time_scale_label(ts),
                                      "ns_per_insn": float(npi) if npi else float("nan"), "tracer": fmt}
    return out


def annotate(campaign: Any, captures: Iterable[dict[str, Any]] | None) -> Any:
    """The campaign rows with ``time_scale``, ``ns_per_insn`` and ``tracer`` columns: from the
    manifest's ``captures`` (the capture-level facts), else as the rows carry them, else the
    defaults (real time, untraced)."""
    if campaign is None or campaign.empty:
        return campaign
    axes = capture_axes(captures or [])
    out = campaign.copy()
    for col, default in (("time_scale", REAL_TIME), ("ns_per_insn", float("nan")), ("tracer", "none")):
        had = out[col].tolist() if col in out.columns else [None] * len(out)
        out[col] = [axes[str(c)][col] if str(c) in axes else h for c, h in zip(out["capture"], had)]
        if col != "ns_per_insn":
            out[col] = out[col].fillna(default)
    return out


#: what a comparison row is keyed by: nothing is ever averaged across these, and a ranking only
#: compares RTOSes that share every one of them (the tracer is named in each row)
COMPARISON_KEYS = ["board", "app", "variant", "time_scale", "metric", "source", "profile"]


def comparison_table(campaign: Any, captures: Iterable[dict[str, Any]] | None = None) -> Any:
    """Seed-style comparison: per board, app, variant (build configuration), time scale, metric,
    source and analyzer profile, every RTOS's (and tracer's) mean as a multiple of the fastest and
    of the slowest RTOS, in µs and CPU cycles (instructions on a virtual-lab time scale)."""
    import numpy as np
    import pandas as pd

    campaign = annotate(merged_rows(campaign), captures)
    df = campaign[(campaign["unit"] == "ns") & (campaign["kind"] != "scalar")].copy() \
        if campaign is not None and not campaign.empty else pd.DataFrame()
    if df.empty:
        return pd.DataFrame(columns=[*COMPARISON_KEYS, "rtos", "tracer", "mean_ns"])
    keys = COMPARISON_KEYS
    for k in ("variant", "profile"):
        df[k] = df[k].fillna("")
    g = df.groupby(keys + ["rtos", "tracer"], dropna=False).agg(
        mean_ns=("mean", "mean"), p99_ns=("p99", "mean"), runs=("capture", "nunique"), n=("n", "sum"),
        ns_per_insn=("ns_per_insn", "first"),
    )
    g = g.reset_index()
    grp = g.groupby(keys, dropna=False)["mean_ns"]
    g["x_fastest"] = g["mean_ns"] / grp.transform("min")
    g["x_slowest"] = g["mean_ns"] / grp.transform("max")
    g["mean_us"] = g["mean_ns"] / 1e3
    virtual = np.isfinite(g["ns_per_insn"].to_numpy(float))
    hz = g["board"].map(BOARD_CPU_HZ).astype(float).to_numpy()
    g["cpu_hz"] = np.where(virtual, 1e9 / g["ns_per_insn"].to_numpy(float), hz)
    g["mean_cycles"] = g["mean_ns"] * g["cpu_hz"] / 1e9
    g["cycles_unit"] = np.where(virtual, "insn", "cycles")
    g["rank"] = grp.rank(method="min").astype("Int64")
    return g.drop(columns="ns_per_insn").sort_values(keys + ["rank"]).reset_index(drop=True)


#: variant tokens that name the build's tracing, not its configuration: an untraced build
#: ``n2-mpu-untraced`` is the baseline of the traced ``n2-mpu`` and ``n2-mpu-ctf``.
_UNTRACED_TOKENS = frozenset({"untraced", "notrace"})
_TRACER_TOKENS = frozenset({"ctf"})


def build_config(variant: str, traced: bool) -> str:
    """The configuration a variant name denotes once its tracing tokens are removed.

    >>> build_config("n2-mpu-untraced", False), build_config("n2-mpu-ctf", True), build_config("", True)
    ('n2-mpu', 'n2-mpu', '')
    """
    drop = _TRACER_TOKENS if traced else _UNTRACED_TOKENS
    return "-".join(t for t in str(variant or "").split("-") if t and t not in drop)


def overhead_table(campaign: Any, captures: list[dict[str, Any]]) -> Any:
    """Instrumentation overhead: the pin-measured mean of a traced build minus that of the untraced
    build of the same board, RTOS, app, configuration (:func:`build_config`: MPU with MPU, N = 2
    with N = 2) and time scale, one row per tracer (``systemview``, ``ctf``, ``tracex``); untraced
    = a capture without a trace. Builds without an untraced twin get no row."""
    import pandas as pd

    ok = [c for c in captures if c.get("status") == "ok"]
    tracer = {c["capture"]: ((c.get("sources") or {}).get("trace") or {}).get("format", "") for c in ok}
    campaign = annotate(merged_rows(campaign), ok)
    df = campaign[(campaign["source"] == "logic") & (campaign["kind"] == "distribution")].copy()
    if df.empty:
        return pd.DataFrame()
    df["tracer"] = df["capture"].map(tracer).fillna("")
    traced = df["tracer"] != ""
    variant = df["variant"] if "variant" in df.columns else pd.Series("", index=df.index)
    df["config"] = [build_config(v, t) for v, t in zip(variant.fillna(""), traced)]
    keys = ["board", "rtos", "app", "config", "time_scale", "metric", "profile"]
    a = df[traced].groupby(keys + ["tracer"])["mean"].mean().rename("traced_ns").reset_index()
    b = df[~traced].groupby(keys)["mean"].mean().rename("untraced_ns").reset_index()
    out = a.merge(b, on=keys, how="inner")
    out["overhead_ns"] = out["traced_ns"] - out["untraced_ns"]
    out["overhead_pct"] = 100.0 * out["overhead_ns"] / out["untraced_ns"]
    return out[keys + ["tracer", "traced_ns", "untraced_ns", "overhead_ns", "overhead_pct"]]


def write_campaign(
    out_dir: Path, results: list[dict[str, Any]], skipped: Sequence[dict[str, str]] = ()
) -> dict[str, Any]:
    """Assemble and write the campaign tables from the per-capture results (``skipped``: what
    discovery looked at and found to be no capture, listed in the manifest)."""
    import pandas as pd

    ok = [r for r in results if r.get("status") == "ok"]
    campaign = annotate(pd.DataFrame([row for r in ok for row in r["metrics"]]), ok)
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
        comp = comparison_table(campaign, ok)
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


#: the instance columns the report reads (``end_site``, ``end_idx`` and ``core`` it never shows)
REPORT_COLUMNS = ("metric", "source", "profile", "unit", "instance", "start_ts", "end_ts", "value",
                  "start_site", "start_idx")


def iter_instances(out_dir: Path, columns: Sequence[str] | None = None) -> Iterable[tuple[str, Any]]:
    """``(capture_id, instances DataFrame)`` for every analyzed capture of a campaign folder: all
    columns, or only ``columns`` (those a file lacks are left out), the text columns as pandas
    categoricals (a few distinct strings per column: 1-4 bytes a row instead of a Python string)."""
    import pyarrow.parquet as pq

    root = Path(out_dir) / "captures"
    for p in sorted(root.rglob("instances.parquet")):
        f = pq.ParquetFile(p)
        names = f.schema_arrow.names
        cols = names if columns is None else [c for c in columns if c in names]
        text = [c for c in cols if str(f.schema_arrow.field(c).type) == "string"]
        table = pq.read_table(p, columns=cols, read_dictionary=text)
        # each column's Arrow buffers are let go as it is converted (peak: one copy, not two)
        yield p.parent.relative_to(root).as_posix(), table.to_pandas(self_destruct=True, split_blocks=True)


def read_instances(out_dir: Path) -> dict[str, Any]:
    """capture id -> its instances (:data:`REPORT_COLUMNS`): what the report reads, read once."""
    return dict(iter_instances(out_dir, REPORT_COLUMNS))
