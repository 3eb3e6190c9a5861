"""`crosstrace export CAPTURE --perfetto OUT.pftrace --vcd OUT.vcd [--window START:END]`.

A capture (folder with run.json, a folder of recordings, or one recording) on one time axis: the
trace's tasks, ISRs, markers and metric instances, and every logic channel mapped onto the trace
clock by the fitted alignment. :mod:`.timeline` builds the axis, :mod:`.perfetto` and :mod:`.vcd`
write it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trace_parsers.errors import AnalysisError, TraceError

from . import timeline

__all__ = ["cmd_export", "setup_cli"]


def setup_cli(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("capture", type=Path, help="capture folder (run.json) or one recording")
    sp.add_argument("--perfetto", type=Path, metavar="OUT.pftrace", help="Perfetto protobuf trace")
    sp.add_argument("--vcd", type=Path, metavar="OUT.vcd", help="VCD of the pins, task running, ISR active")
    sp.add_argument("--window", metavar="START:END",
                    help="keep only this interval of the export's time axis (ns, or with us/ms/s)")
    sp.add_argument("--profile", default=None, help="logic analyzer profile to use (default: ideal/first)")
    sp.add_argument("--no-metrics", action="store_true", help="leave out the metric instance tracks")
    sp.add_argument("--on-corrupt", choices=("raise", "recover", "warn", "skip"), default="recover",
                    help="damaged input: recover (default: a file cut inside its final record is a "
                    "DATA_LOSS diagnostic, other damage raises), raise, warn or skip")
    sp.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    if args.perfetto is None and args.vcd is None:
        print("crosstrace: export needs --perfetto OUT.pftrace and/or --vcd OUT.vcd", file=sys.stderr)
        return 2
    missing = None  # the Perfetto extra is not installed: the VCD is still written
    try:
        window = timeline.parse_window(args.window) if args.window else None
        if args.perfetto is not None:
            from . import perfetto

            try:
                perfetto.protos()  # fail before decoding anything when the extra is missing
            except AnalysisError as e:
                if args.vcd is None:
                    raise
                missing = e
        trace, capture, sites, options = timeline.load(args.capture, profile=args.profile,
                                                       on_corrupt=args.on_corrupt)
        tl = timeline.build(trace, capture, sites=sites, options=options, metrics=not args.no_metrics)
        if window is not None:
            tl = tl.clip(*window)
        if args.perfetto is not None and missing is None:
            args.perfetto.parent.mkdir(parents=True, exist_ok=True)
            n = perfetto.write(tl, args.perfetto)
            print(f"wrote {args.perfetto} ({n} packets; open in https://ui.perfetto.dev)")
        if args.vcd is not None:
            from . import vcd

            args.vcd.parent.mkdir(parents=True, exist_ok=True)
            n = vcd.write(tl, args.vcd)
            print(f"wrote {args.vcd} ({n} value changes)")
    except (AnalysisError, TraceError) as e:
        print(f"crosstrace: {e}", file=sys.stderr)
        return 2
    for note in tl.notes:
        print(f"  {note}")
    if missing is not None:
        print(f"crosstrace: {args.perfetto} not written: {missing}", file=sys.stderr)
        return 2
    return 0
