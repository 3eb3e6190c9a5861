"""Run every benchmark module present and print one table of results with peer ratios.

Each module ``bench/<area>.py`` exposes ``run() -> list[dict]`` with rows
``{name, value, unit, ratio?, peer?, note?}``; a module that fails is reported and the rest run.
``python -m bench [area ...]`` limits the run to the named areas.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
import traceback
from pathlib import Path

AREAS = ("startup", "systemview", "gaps", "report", "tracex", "logic", "analysis", "vla", "firmware")


def main(argv: list[str]) -> int:
    wanted = [a for a in argv if not a.startswith("-")] or list(AREAS)
    rows: list[dict] = []
    failed = 0
    for area in wanted:
        try:
            mod = importlib.import_module(f"bench.{area}")
        except ModuleNotFoundError as e:
            if e.name == f"bench.{area}":
                print(f"[{area}] no benchmark module", file=sys.stderr)
                continue
            raise
        t0 = time.perf_counter()
        try:
            for r in mod.run():
                rows.append({"area": area, **r})
        except Exception:  # report and go on with the other areas
            failed += 1
            print(f"[{area}] FAILED:\n{traceback.format_exc()}", file=sys.stderr)
        print(f"[{area}] done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    print(f"\n{'area':<11} {'benchmark':<52} {'value':>14} {'unit':<10} {'ratio':>9}  peer / note")
    for r in rows:
        v = r.get("value")
        vs = f"{v:,.3f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v)
        ratio = r.get("ratio")
        rs = f"{ratio:.1f}x" if isinstance(ratio, (int, float)) else "-"
        extra = " ".join(str(x) for x in (r.get("peer"), r.get("note")) if x)
        print(f"{r['area']:<11} {r['name']:<52} {vs:>14} {r.get('unit', ''):<10} {rs:>9}  {extra}")
    out = Path("out")
    out.mkdir(exist_ok=True)
    (out / "bench.json").write_text(json.dumps(rows, indent=2, default=str))
    print(f"\nresults written to {out / 'bench.json'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
