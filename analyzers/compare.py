"""`crosstrace compare A B`: per-metric differences between two runs or campaigns, as a CI gate.

``A`` and ``B`` are campaign folders written by ``crosstrace analyze -o`` (or one capture's output
folder ``<campaign>/captures/<id>``). Instances are pooled per board, RTOS, app, variant, time
scale, tracer, metric, source and analyzer profile (several runs of the same test pool together;
runs at another time scale or with another tracer never do). For each key present
in both, the relative change of the mean ``(mean_B - mean_A) / mean_A`` gets a percentile
bootstrap confidence interval (resampling instances of A and B independently, fixed seed).

When A and B each hold one capture (two runs chosen by the user: the same test built two ways, say
Zephyr's context switch without and with the MPU stack guard), their rows pair whatever their
variants are: the build configuration is what such an A/B changes, and the table names both
(``n2 → n2-mpu``). Board, RTOS, app, time scale, tracer, metric, source and profile must still
match.

A *regression* is a change whose whole confidence interval lies beyond ``--threshold``: for
latencies and durations, slower (lower bound above +threshold); for periods, either way (the
interval outside ±threshold). Exit code 1 when any regression is found, else 0 (2 on bad input).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

KEY = ("board", "rtos", "app", "variant", "time_scale", "tracer", "metric", "source", "profile")


@dataclass(frozen=True)
class Change:
    board: str
    rtos: str
    app: str
    variant: str
    time_scale: str
    tracer: str
    metric: str
    source: str
    profile: str
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    rel_change_pct: float
    ci_low_pct: float
    ci_high_pct: float
    regression: bool
    improvement: bool
    variant_b: str = ""  #: B's variant when it differs from A's (an A/B of two single captures)


def _axes(entry: dict[str, Any]) -> dict[str, str]:
    """The identity columns of one capture (manifest entry or ``result.json``)."""
    from .campaign.tables import capture_axes

    ax = capture_axes([{**entry, "capture": "_"}])["_"]
    return {"board": entry.get("board") or "", "rtos": entry.get("rtos") or "", "app": entry.get("app") or "",
            "variant": entry.get("variant") or "", "time_scale": ax["time_scale"], "tracer": ax["tracer"]}


def load_instances(path: Path) -> Any:
    """Pooled per-instance values of a campaign or capture output folder (pandas DataFrame)."""
    import pandas as pd

    path = Path(path)
    frames = []
    if (path / "instances.parquet").is_file():
        res = json.loads((path / "result.json").read_text()) if (path / "result.json").is_file() else {}
        frames.append(pd.read_parquet(path / "instances.parquet").assign(
            **_axes(res), capture=str(res.get("capture") or path.name)))
    elif (path / "manifest.json").is_file():
        man = json.loads((path / "manifest.json").read_text())
        for c in man["captures"]:
            if c.get("status") != "ok":
                continue
            p = path / "captures" / c["capture"] / "instances.parquet"
            if p.is_file():
                frames.append(pd.read_parquet(p).assign(**_axes(c), capture=str(c["capture"])))
    else:
        raise FileNotFoundError(
            f"{path}: neither a campaign folder (manifest.json) nor a capture output "
            "folder (instances.parquet)"
        )
    if not frames:
        return pd.DataFrame(columns=[*KEY, "capture", "value", "unit"])
    df = pd.concat(frames, ignore_index=True)
    df["profile"] = df["profile"].fillna("")
    return df[(df["unit"] == "ns") & ~df["metric"].str.startswith("cpu.")]


def _rel(a: Any, b: Any) -> Any:
    """``100 (b - a) / a``, 0 where ``b == a`` (also when both are 0), NaN where ``a`` is 0 and
    ``b`` is not (no relative change from nothing): never a NumPy warning."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    safe = np.where(a == 0, 1.0, a)
    return np.where(b == a, 0.0, np.where(a == 0, np.nan, 100.0 * (b - a) / safe))


def bootstrap_rel_change(
    a: np.ndarray,
    b: np.ndarray,
    *,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    max_n: int = 5000,
) -> tuple[float, float, float]:
    """Relative change of the mean (B vs A) in percent and its percentile bootstrap interval.

    >>> r = bootstrap_rel_change(np.full(50, 100.0), np.full(50, 110.0))
    >>> [round(x, 6) for x in r]
    [10.0, 10.0, 10.0]
    """
    rng = np.random.default_rng(seed)
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    ma, mb = float(a.mean()), float(b.mean())
    point = float(_rel(ma, mb))
    if a.size > max_n:  # bound the cost: a random subsample keeps the interval honest, only wider
        a = rng.choice(a, max_n, replace=False)
    if b.size > max_n:
        b = rng.choice(b, max_n, replace=False)
    ra, rb = np.empty(n_boot), np.empty(n_boot)
    step = max(1, 1_000_000 // max(a.size, b.size))  # bound memory: ~1 M indices per chunk
    for i in range(0, n_boot, step):
        k = min(step, n_boot - i)
        ra[i : i + k] = a[rng.integers(0, a.size, (k, a.size))].mean(axis=1)
        rb[i : i + k] = b[rng.integers(0, b.size, (k, b.size))].mean(axis=1)
    rel = _rel(ra, rb)
    if not np.isfinite(rel).all():  # a resampled baseline mean of 0: no relative interval
        return point, float("nan"), float("nan")
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.percentile(rel, [100 * alpha, 100 * (1 - alpha)])
    return point, float(lo), float(hi)


def compare(
    a_dir: Path,
    b_dir: Path,
    *,
    threshold_pct: float = 5.0,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    source: str | None = None,
) -> list[Change]:
    """Every metric present in both A and B with its change, interval and regression flag."""
    da, db = load_instances(a_dir), load_instances(b_dir)
    if source:
        da, db = da[da["source"] == source], db[db["source"] == source]
    variant_b = ""
    if da["capture"].nunique() == 1 and db["capture"].nunique() == 1:  # an A/B of two runs
        va, vb = str(da["variant"].iloc[0]), str(db["variant"].iloc[0])
        if va != vb:
            variant_b, db = vb, db.assign(variant=va)
    ga = {k: g["value"].to_numpy() for k, g in da.groupby(list(KEY), dropna=False)}
    gb = {k: g["value"].to_numpy() for k, g in db.groupby(list(KEY), dropna=False)}
    out = []
    for k in sorted(set(ga) & set(gb)):
        a, b = ga[k], gb[k]
        point, lo, hi = bootstrap_rel_change(a, b, n_boot=n_boot, confidence=confidence, seed=seed)
        metric = k[KEY.index("metric")]
        if metric.endswith(".period"):
            reg = lo > threshold_pct or hi < -threshold_pct
            imp = False
        else:
            reg = lo > threshold_pct
            imp = hi < -threshold_pct
        out.append(
            Change(  # type: ignore[call-arg]
                *[str(x) for x in k],  # type: ignore[arg-type]
                int(a.size),
                int(b.size),
                float(a.mean()),
                float(b.mean()),
                point,
                lo,
                hi,
                bool(reg),
                bool(imp),
                variant_b,
            )
        )
    return out


def setup_cli(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("a", type=Path, help="baseline: campaign folder or capture output folder")
    sp.add_argument("b", type=Path, help="candidate: campaign folder or capture output folder")
    sp.add_argument(
        "--threshold",
        type=float,
        default=5.0,
        help="regression threshold in percent of the baseline mean (default 5)",
    )
    sp.add_argument("--confidence", type=float, default=0.95, help="bootstrap interval level (default 0.95)")
    sp.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples (default 2000)")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--source", choices=("trace", "logic"), default=None, help="compare one source only")
    sp.add_argument("-o", "--output", type=Path, default=None, help="write the table as .csv or .json")
    sp.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    try:
        changes = compare(
            args.a,
            args.b,
            threshold_pct=args.threshold,
            n_boot=args.bootstrap,
            confidence=args.confidence,
            seed=args.seed,
            source=args.source,
        )
    except FileNotFoundError as e:
        print(f"crosstrace: {e}", file=sys.stderr)
        return 2
    if not changes:
        print("crosstrace: no metric is present in both A and B", file=sys.stderr)
        return 2
    print(
        f"{'metric':<34} {'rtos':<10} {'app':<14} {'variant':<16} {'time scale':<10} {'src':<6} "
        f"{'profile':<7} {'mean A':>12} {'mean B':>12} {'Δ %':>8} {'CI %':>19}"
    )
    for c in changes:
        flag = "  REGRESSION" if c.regression else "  improved" if c.improvement else ""
        variant = f"{c.variant or '-'} → {c.variant_b}" if c.variant_b else c.variant or "-"
        print(
            f"{c.metric:<34} {c.rtos:<10} {c.app:<14} {variant:<16} {c.time_scale:<10} "
            f"{c.source:<6} {c.profile or '-':<7} {c.mean_a:>12.1f} {c.mean_b:>12.1f} "
            f"{c.rel_change_pct:>+8.2f} [{c.ci_low_pct:>+7.2f}, {c.ci_high_pct:>+7.2f}]{flag}"
        )
    if args.output:
        rows = [asdict(c) for c in changes]
        if args.output.suffix.lower() == ".json":
            args.output.write_text(json.dumps(rows, indent=1))
        else:
            import pandas as pd

            pd.DataFrame(rows).to_csv(args.output, index=False)
    n = sum(c.regression for c in changes)
    print(
        f"{len(changes)} metrics compared, {n} regressions beyond {args.threshold:g} % "
        f"({args.confidence:.0%} bootstrap interval)"
    )
    return 1 if n else 0
