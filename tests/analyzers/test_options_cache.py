"""Every option that can change a result is part of the cache key and of manifest.json/result.json:
a rerun with an option changed is recomputed, never served from the cache, and its verdict follows."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analyzers.campaign.capture import analyze_capture
from analyzers.options import DEFAULT_TOLERANCE, AnalysisOptions
from trace_parsers.errors import AnalysisError

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
SRC = CAPTURES / "qemu_netduinoplus2" / "freertos" / "isr_latency" / "ref"


def _analyze(src: Path, out: Path, *extra: str) -> tuple[int, str, dict]:
    p = subprocess.run([sys.executable, "-m", "analyzers.cli", "analyze", str(src), "-o", str(out),
                        "--scheduler", "serial", *extra], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr, json.loads((out / "manifest.json").read_text())


@pytest.fixture()
def cap(tmp_path: Path) -> Path:
    dest = tmp_path / "in" / "isr_latency" / "ref"
    shutil.copytree(SRC, dest)
    return dest


def test_a_tighter_tolerance_is_recomputed_and_fails(cap: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    rc, text, m = _analyze(cap.parent.parent, out)
    assert rc == 0, text
    assert m["options"]["tolerance"] == DEFAULT_TOLERANCE
    # the same command with a tolerance no real measurement meets: never the cached PASS
    rc, text, m = _analyze(cap.parent.parent, out, "--tolerance", "0.000001")
    assert "(0 cached)" in text, text
    assert m["options"]["tolerance"] == 0.000001
    result = json.loads((out / "captures" / m["captures"][0]["capture"] / "result.json").read_text())
    assert result["options"]["tolerance"] == 0.000001
    # the limit is the tolerance plus one quantum (a tick and a sample): far below the default's 2 %
    limits = [r["limit_pct"] for r in result["crossval"] if r.get("limit_pct") is not None]
    assert limits and max(limits) < 100 * DEFAULT_TOLERANCE, limits
    # one quantum is more than 0.0001 % of every metric here: nothing can be judged PASS any more
    assert result["verdict"] == "UNRESOLVED", (rc, result["verdict"], text)
    # back to the default: the first result is not reused either (its key differs from the last)
    rc, text, m = _analyze(cap.parent.parent, out)
    assert rc == 0 and "(0 cached)" in text, text
    rc, text, m = _analyze(cap.parent.parent, out)  # unchanged now: cached
    assert rc == 0 and "(1 cached)" in text, text


def test_the_verdict_follows_the_tolerance(tmp_path: Path) -> None:
    """A negative control (a trace record delayed by 5 % of the latency) FAILs at 2 %; at 10 % it
    would pass, which `analyze` reports as a control that did not fail (exit 5), never the
    cached FAIL."""
    src = SRC.parent.parent / "isr_latency-negctl-delay"
    dest = tmp_path / "in" / src.name
    shutil.copytree(src, dest)
    out = tmp_path / "out"
    rc, text, m = _analyze(dest.parent, out)
    assert rc == 0 and "FAIL" in text, text
    rc, text, m = _analyze(dest.parent, out, "--tolerance", "0.10")
    assert rc == 5 and "(0 cached)" in text and "PASS" in text, text


@pytest.mark.parametrize("field, value", [("on_corrupt", "warn"), ("tick_hz", 1000), ("chunk_events", 4096),
                                          ("tolerance", 0.05)])
def test_every_option_is_in_the_key(cap: Path, tmp_path: Path, field: str, value: object) -> None:
    out = tmp_path / "out"
    first = analyze_capture(cap, "c", out)
    assert not first["cached"] and first["options"] == AnalysisOptions().as_dict()
    assert analyze_capture(cap, "c", out)["cached"]
    again = analyze_capture(cap, "c", out, **{field: value})
    assert not again["cached"], field
    assert again["options"][field] == value
    assert again["input_hash"] != first["input_hash"]


@pytest.mark.parametrize("fields", [{"tolerance": 0}, {"tolerance": float("nan")}, {"on_corrupt": "ignore"},
                                    {"tick_hz": 0}, {"chunk_events": -3}, {"tolerance": True}])
def test_options_are_validated_once(fields: dict) -> None:
    with pytest.raises(AnalysisError) as e:
        AnalysisOptions(**fields)
    assert e.value.code == "AN_BAD_OPTION"


def test_a_bad_option_on_the_command_line_exits_2(cap: Path, tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "analyzers.cli", "analyze", str(cap), "-o", str(tmp_path / "o"),
                        "--tolerance", "-1"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "AN_BAD_OPTION" in p.stderr, p.stderr
