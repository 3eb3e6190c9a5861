"""`crosstrace analyze DIR...`: arguments and exit codes (the work is in :mod:`.scheduler`).

Exit codes are the contract (docs/methodology.md, "Exit codes"): the worst outcome wins.

==== =====================================================================================
0    every capture analyzed; none FAILs or is INCOMPLETE (negative controls failed as built)
1    a capture could not be analyzed (bad input, hash mismatch), or no capture was found
2    a folder to search does not exist
3    a cross-validation FAILs
4    a cross-validation is INCOMPLETE (lost or extra instances, a site seen on one side only,
     an edge count that is not the declared one), and none FAILs
5    a negative control did not fail as built: the check it exists to exercise cannot fail
==== =====================================================================================

``--allow-fail`` turns 3 and 4 into 0 (the verdicts are still reported); 1 and 5 stay.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from trace_parsers.errors import AnalysisError

from ..options import DEFAULT_TOLERANCE, ON_CORRUPT, AnalysisOptions
from .scheduler import analyze_dirs


def setup_cli(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("dirs", nargs="+", type=Path, help="folders to search for capture folders")
    sp.add_argument("-o", "--output", type=Path, default=Path("out/campaign"), help="output folder")
    sp.add_argument("-j", "--jobs", type=int, default=None, help="parallel workers (default: CPU count)")
    sp.add_argument(
        "--scheduler",
        default="processes",
        help="'processes' (default), 'serial', 'dask-local', or a Dask scheduler address tcp://host:port",
    )
    sp.add_argument("--force", action="store_true", help="ignore cached results")
    sp.add_argument(
        "--on-corrupt",
        choices=ON_CORRUPT,
        default="recover",
        help="reader policy for damaged input (default: recover = a truncated final record is a DATA_LOSS "
        "diagnostic and everything before it is analyzed; raise = any damage fails the capture)",
    )
    sp.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                    help=f"agreement tolerance (default {DEFAULT_TOLERANCE} = {100 * DEFAULT_TOLERANCE:g}%%)")
    sp.add_argument(
        "--allow-fail",
        action="store_true",
        help="exit 0 although a cross-validation FAILs (3) or is INCOMPLETE (4); errors still exit 1",
    )
    sp.add_argument(
        "--tick-hz",
        type=int,
        default=None,
        help="trace tick rate (Hz) for recordings that do not state it (TraceX) when run.json does not "
        "either; without it such times stay in ticks",
    )
    sp.add_argument(
        "--chunk-events",
        type=_positive,
        default=None,
        metavar="N",
        help="read every SystemView / sigrok recording in chunks of N events (memory bounded by a chunk, "
        "not the recording; default: chunks of 256 Ki events for SystemView recordings of 32 MB or more "
        "and sigrok sessions of 1 GiB of samples or more)",
    )
    sp.add_argument("-q", "--quiet", action="store_true")
    sp.set_defaults(func=cmd_analyze)


def _positive(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def cmd_analyze(args: argparse.Namespace) -> int:
    try:
        options = AnalysisOptions(tolerance=args.tolerance, on_corrupt=args.on_corrupt,
                                  tick_hz=getattr(args, "tick_hz", None),
                                  chunk_events=getattr(args, "chunk_events", None))
    except AnalysisError as e:
        print(f"crosstrace: {e}", file=sys.stderr)
        return 2
    try:
        m = analyze_dirs(args.dirs, args.output, workers=args.jobs, scheduler=args.scheduler,
                         force=args.force, quiet=args.quiet, options=options)
    except FileNotFoundError as e:
        print(f"crosstrace: {e}", file=sys.stderr)
        return 2
    _print_skipped(m.get("skipped") or [])
    return exit_code(m["captures"], int(m["failed"]), args.output, allow_fail=args.allow_fail)


def _expected(c: dict[str, Any]) -> bool:
    """A negative control that failed as built."""
    exp = c.get("expectation")
    return bool(exp) and bool(exp.get("met"))


def exit_code(caps: list[dict[str, Any]], n_fail: int, output: Path, *, allow_fail: bool = False) -> int:
    """Print the summary and return the exit code (module docstring)."""
    ok = [c for c in caps if c.get("status") == "ok"]
    broken_controls = [c for c in ok if c.get("expectation") and not _expected(c)]
    judged = [c for c in ok if not c.get("expectation")]
    fails = [c for c in judged if c.get("verdict") == "FAIL"]
    incomplete = [c for c in judged if c.get("verdict") == "INCOMPLETE"]
    n_cached = sum(bool(c.get("cached")) for c in caps)
    controls = [c for c in ok if c.get("expectation")]
    lost = [c for c in ok if any(d.get("severity") == "DATA_LOSS" for d in c.get("diagnostics") or ())]
    print(
        f"{len(caps)} captures: {len(ok)} analyzed ({n_cached} cached), {n_fail} failed; "
        f"cross-validation FAIL in {len(fails)}, INCOMPLETE in {len(incomplete)}"
        + (f", negative controls failing as built {sum(_expected(c) for c in controls)} of {len(controls)}"
           if controls else "")
        + (f"; data lost in {len(lost)}" if lost else "")
        + f"; results in {output}"
    )
    for c in lost[:10]:  # what was lost is in the capture's result.json, "diagnostics"
        diags = c.get("diagnostics") or ()
        codes = sorted({d.get("code") for d in diags if d.get("severity") == "DATA_LOSS"})
        print(f"  DATA LOST {c['capture']}: {', '.join(map(str, codes))} (result.json diagnostics)",
              file=sys.stderr)
    for c in caps:
        if c.get("status") != "ok":
            print(f"  FAILED {c['capture']}: {c.get('error')}", file=sys.stderr)
    for c in fails + incomplete:
        why = "; ".join(c.get("problems") or []) or "see crossval.csv"
        print(f"  {c['verdict']} {c['capture']}: {why}", file=sys.stderr)
    for c in broken_controls:
        print(f"  NEGATIVE CONTROL {c['capture']}: {c['expectation']['detail']}", file=sys.stderr)
    if not caps:
        print("crosstrace: no capture folders found", file=sys.stderr)
        return 1
    if n_fail:
        return 1
    if broken_controls:
        return 5
    if allow_fail:
        return 0
    return 3 if fails else 4 if incomplete else 0


def _print_skipped(skipped: list[dict[str, str]], limit: int = 20) -> None:
    """Folders and files discovery looked at and did not analyze (nothing vanishes silently)."""
    if not skipped:
        return
    print(f"skipped {len(skipped)} folders/files that hold no recording:", file=sys.stderr)
    for s in skipped[:limit]:
        print(f"  {s['path']}: {s['reason']}", file=sys.stderr)
    if len(skipped) > limit:
        print(f"  ... and {len(skipped) - limit} more (manifest.json 'skipped')", file=sys.stderr)
