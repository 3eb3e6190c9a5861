"""`crosstrace report DIR -o report.html`: one self-contained HTML file for a campaign.

The first screen answers "which RTOS is faster, by how much, and do trace and pins agree?"; details
follow collapsed (searchable, sortable tables), then interactive distributions (hand-written SVG
and a few lines of script: the file needs nothing else, offline), your own recordings, clock
alignment, exclusions and provenance. Page sections are in :mod:`.html`, charts in :mod:`.figures`,
the data choices in :mod:`.select`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from . import figures as F
from . import html as H
from . import pictures as P
from . import select as S
from .own import own_recordings

__all__ = ["RTOS_COLOURS", "cmd_report", "html_table", "render", "setup_cli"]
html_table = H.html_table
RTOS_COLOURS = F.RTOS_COLOURS  #: the report's colour per RTOS (notebooks use the same)


def _optional_table(d: dict[str, Any], out_dir: Path, name: str) -> Any:
    """A campaign table ``load_campaign`` may not know yet (read from NAME.parquet / NAME.csv)."""
    import pandas as pd

    if name in d:
        return d[name]
    p, c = out_dir / f"{name}.parquet", out_dir / f"{name}.csv"
    if p.is_file():
        return pd.read_parquet(p)
    if c.is_file() and c.stat().st_size > 1:
        try:
            return pd.read_csv(c)
        except pd.errors.EmptyDataError:
            return pd.DataFrame()
    return pd.DataFrame()


def _windows(out_dir: Path, xv: Any, inst: dict[str, Any]) -> Any:
    """Failing comparisons, then outlying instances, each with the window to export."""
    import pandas as pd

    bad = xv[xv["verdict"].isin(["FAIL", "INCOMPLETE"])] if not xv.empty and "verdict" in xv else None
    frames = [f for f in (S.failure_windows(out_dir, bad, inst), S.outliers(inst)) if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def render(out_dir: Path, *, title: str = "crosstrace report") -> str:
    """The report for the campaign written by ``crosstrace analyze`` into ``out_dir``."""
    from ..campaign.tables import annotate, comparison_table, load_campaign, merged_rows, read_instances

    out_dir = Path(out_dir)
    d = load_campaign(out_dir)
    man = d["manifest"]
    caps = man.get("captures", [])
    # per-core rows are not shown; every row names its time scale and tracer
    camp, xv, comp = annotate(merged_rows(d["campaign"]), caps), d["crossval"], d["comparison"]
    if camp is not None and not camp.empty:  # as comparison.csv, also for campaigns written before
        comp = comparison_table(camp, caps)   # comparisons were split by time scale and tracer
    info = S.capture_info(out_dir, caps)
    ag = S.agreement(xv, info)
    inst = read_instances(out_dir)  # every capture's instances, read once
    own = own_recordings(inst, camp, info)
    F.set_colours([str(r) for r in camp["rtos"].dropna().unique()] if not camp.empty else [])
    folders = {str(c.get("capture")): str(c.get("folder") or c.get("capture")) for c in caps}
    tests = S.tests(comp, camp, info)  # every figure of the report, computed once here
    parts = [
        H.head(title, out_dir, man),
        H.section_answer(tests, ag, caps, own),
        H.section_own(out_dir, camp, own, inst),
        H.section_agreement(xv, d.get("crossval_counts"), [c["capture"] for c in ag.controls]),
        H.section_kernel_vs_pin(_optional_table(d, out_dir, "kernel_vs_pin")),
        P.section_ntasks(tests, caps),
        P.section_jitter(S.series(inst, camp, only=P.JITTER, every_scale=True)),
        H.section_comparison(comp, d.get("overhead")),
        H.section_distributions(S.series(inst, camp), _windows(out_dir, xv, inst), folders),
        H.section_tests(camp),
        H.section_alignment(d.get("alignment")),
        H.section_exclusions(camp, caps),
        H.section_provenance(caps, info),
        f"<script>{F.SCRIPT}</script></body></html>",
    ]
    return "\n".join(p for p in parts if p)


def setup_cli(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("dir", type=Path, help="campaign folder written by `crosstrace analyze -o DIR`")
    sp.add_argument("-o", "--output", type=Path, default=Path("out/report.html"))
    sp.add_argument("--title", default="crosstrace report")
    sp.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    try:
        text = render(args.dir, title=args.title)
    except FileNotFoundError as e:
        print(f"crosstrace: {e}", file=sys.stderr)
        return 2
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} ({len(text) / 1024:.0f} KiB)")
    return 0
