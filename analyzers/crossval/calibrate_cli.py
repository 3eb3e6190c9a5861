"""`crosstrace calibrate CAPTURE`: measure per-site constants on a calibration capture, to declare
them (run.json ``"calibration"``) on *other* captures of the same firmware build and board.

The constants are the sites' biases under the shared clock fit (trace record later than pin, in
ns, relative to the mean of all sites), measured with the capture's finest logic profile. They are only
meaningful as inputs to captures that did not produce them: a capture is never calibrated from
itself.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def setup_cli(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("capture", type=Path, help="a capture folder (run.json + trace + logic)")
    sp.add_argument("-o", "--output", type=Path, help="write the JSON block here (default: stdout)")
    sp.set_defaults(func=cmd_calibrate)


def measure(folder: Path) -> dict[str, Any]:
    """The calibration block measured on one capture folder."""
    import tempfile

    from ..campaign.capture import analyze_capture

    with tempfile.TemporaryDirectory() as tmp:
        res = analyze_capture(folder, folder.name, Path(tmp), force=True)
    if res.get("status") != "ok":
        raise SystemExit(f"crosstrace calibrate: {folder}: {res.get('error')}")
    rows = [r for r in res["alignment"] if r.get("site_bias_ns") == r.get("site_bias_ns")]  # not NaN
    finest = min((float(r["q_logic_ns"]) for r in rows), default=0.0)
    per_site = {r["site"]: -float(r["site_bias_ns"]) for r in rows if float(r["q_logic_ns"]) == finest}
    if not per_site:
        raise SystemExit(f"crosstrace calibrate: {folder}: no site was seen in both the trace and the pins")
    run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    fw = run.get("firmware") or {}
    name = "/".join(folder.resolve().parts[-3:])
    src = f"crosstrace calibrate {name} (board {run.get('board', '?')}, elf {fw.get('elf_sha256', '?')[:12]})"
    src += f", {1e3 / finest:g} MS/s profile" if finest else ""
    return {"source": src, "sites": {s: round(v, 3) for s, v in sorted(per_site.items())}}


def cmd_calibrate(args: argparse.Namespace) -> int:
    block = json.dumps({"calibration": measure(args.capture)}, indent=1)
    if args.output:
        args.output.write_text(block + "\n", encoding="utf-8")
    else:
        sys.stdout.write(block + "\n")
    return 0
