"""Golden metrics and cross-validation on the reference captures in captures/.

Every reference capture (a folder with run.json under captures/, not ``*.failed``) is analyzed;
its metric statistics must equal ``tests/golden/<capture-id>/metrics.json`` (QEMU runs are
deterministic), including the raw trace-versus-pin differences and the calibration used, and its
agreement must PASS — except for negative controls, which must fail exactly as built. Regenerate the golden
files with ``make golden`` (``UPDATE_GOLDEN=1``) and review the diff.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from analyzers.campaign import analyze_capture
from analyzers.campaign.discover import discover

from ..conftest import IN_CI

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "captures"
GOLDEN = ROOT / "tests" / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN", "") not in ("", "0")
STATS = ("n", "mean", "std", "min", "p1", "p50", "p99", "max")


def reference_captures() -> list[tuple[str, Path]]:
    if not CAPTURES.is_dir():
        return []
    return [(cid, d) for cid, d in discover([CAPTURES]) if not d.name.endswith(".failed")]


REFS = reference_captures()
SMALLEST = (
    min(REFS, key=lambda r: sum(f.stat().st_size for f in r[1].iterdir() if f.is_file()))[0] if REFS else None
)


def _params():
    if not REFS:
        return [pytest.param(None, marks=pytest.mark.skip(reason="no reference captures in captures/ yet"))]
    return [pytest.param(cid, marks=() if cid == SMALLEST else pytest.mark.slow, id=cid) for cid, _ in REFS]


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    out = tmp_path_factory.mktemp("golden")
    cache: dict[str, dict] = {}

    def get(cid: str) -> dict:
        if cid not in cache:
            folder = dict(REFS)[cid]
            cache[cid] = analyze_capture(folder, cid, out, force=True)
        return cache[cid]

    return get


def golden_view(result: dict) -> dict:
    """The part of a capture's result that is golden: statistics per metric, source and profile,
    agreement verdicts and alignment counts."""
    metrics = {}
    for r in result["metrics"]:
        if r.get("core", -1) != -1:  # per-core rows of multi-core recordings: not golden
            continue
        key = f"{r['metric']}|{r['source']}|{r['profile']}"
        metrics[key] = {k: r[k] for k in STATS if k in r} | {"unit": r["unit"]}
    keys = ("verdict", "n_pairs", "unmatched_trace", "unmatched_logic", "raw_diff_ns", "raw_rel_diff_pct")
    keys += ("rel_diff_pct", "calibration_ns", "calibration_source")
    xval = {f"{r['metric']}|{r['profile']}": {k: r[k] for k in keys} for r in result["crossval"]}
    xval["capture"] = {"verdict": result["verdict"]}
    align = {
        f"{r['site']}|{r['profile']}": {k: r[k] for k in ("n_trace", "n_logic", "n_matched")}
        for r in result["alignment"]
    }
    return {"capture": result["capture"], "metrics": metrics, "crossval": xval, "alignment": align}


def _close(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        if math.isnan(a) and math.isnan(b):
            return True
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)
    return a == b


def _diff(got: dict, want: dict, path: str = "") -> list[str]:
    out = []
    for k in sorted(set(got) | set(want)):
        p = f"{path}/{k}"
        if k not in got:
            out.append(f"missing {p}")
        elif k not in want:
            out.append(f"unexpected {p}")
        elif isinstance(want[k], dict) and isinstance(got[k], dict):
            out += _diff(got[k], want[k], p)
        elif not _close(got[k], want[k]):
            out.append(f"{p}: got {got[k]!r}, golden {want[k]!r}")
    return out


@pytest.mark.golden
@pytest.mark.parametrize("cid", _params())
def test_golden_metrics(cid, analyzed):
    res = analyzed(cid)
    assert res["status"] == "ok", res.get("error")
    view = json.loads(json.dumps(golden_view(res), default=float))
    path = GOLDEN / cid / "metrics.json"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(view, indent=1, sort_keys=True) + "\n")
        return
    if not path.is_file():
        msg = f"no golden file {path.relative_to(ROOT)}: run `make golden` and review it"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    want = json.loads(path.read_text())
    problems = _diff(view, want)
    assert not problems, "\n".join(problems[:40])


@pytest.mark.parametrize("cid", _params())
def test_cross_validation_never_fails_on_reference_captures(cid, analyzed):
    res = analyzed(cid)
    assert res["status"] == "ok", res.get("error")
    run = json.loads((dict(REFS)[cid] / "run.json").read_text())
    if run.get("expect"):  # a negative control: it must fail as built, with the injected amount
        assert res["expectation"]["met"], res["expectation"]
        assert res["verdict"] == run["expect"]["verdict"]
        return
    bad = [r for r in res["crossval"] if r["verdict"] in ("FAIL", "INCOMPLETE")] + [
        r for r in res["crossval_counts"] if r["verdict"] == "FAIL"
    ]
    assert not bad and not res["problems"], (bad, res["problems"])
    assert res["verdict"] in ("PASS", "N/A"), res["verdict"]
    if (run.get("time_scale") or {}).get("ns_per_insn", 1) >= 8:
        # at board speed every cross-validated metric of the four tests is resolved at 100 MS/s
        la100 = [r for r in res["crossval"] if r["profile"] == "la100"]
        assert all(r["verdict"] == "PASS" for r in la100), la100
    if run.get("trace") and run.get("logic") and any(e["profile"]["name"] == "ideal" for e in run["logic"]):
        # the ideal analyzer (1 GHz, no drift) must resolve and pass every shared metric
        ideal = [r for r in res["crossval"] if r["profile"] == "ideal"]
        assert ideal and all(r["verdict"] == "PASS" for r in ideal), ideal
        assert all(r["unmatched_logic"] == 0 or r["n_pairs"] > 0 for r in ideal)
