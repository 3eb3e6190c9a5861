"""Every committed capture folder (captures/**/run.json): files present, sha256 equal to run.json, schema-1
fields present, logic channels named after the sites, and the folder inside the size budget."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest

from tests.conftest import CAPTURES, ROOT, sha256_of

RUNS = sorted(CAPTURES.rglob("run.json")) if CAPTURES.is_dir() else []
SITE_NAMES = set(
    re.findall(
        r'X\(\s*\d+\s*,\s*\w+\s*,\s*"([^"]+)"', (ROOT / "firmware" / "include" / "ct_sites.h").read_text()
    )
)
REQUIRED = {
    "schema",
    "board",
    "rtos",
    "rtos_version",
    "app",
    "options",
    "firmware",
    "trace",
    "logic",
    "uart",
    "sites",
    "qemu",
    "result_lines",
    "status",
    "created_utc",
}


def _id(p: Path) -> str:
    return str(p.parent.relative_to(CAPTURES))


def test_captures_folder_budget():
    total = sum(f.stat().st_size for f in CAPTURES.rglob("*") if f.is_file()) if CAPTURES.is_dir() else 0
    assert total < 60 * 10**6, f"captures/ holds {total / 1e6:.1f} MB (budget 60 MB)"
    for f in CAPTURES.rglob("*"):
        assert not f.name.startswith(".") or f.name == ".gitattributes", f"temporary leftover {f}"
        assert not f.name.endswith(".failed"), f"failed run committed: {f}"


@pytest.mark.parametrize("run_json", RUNS, ids=_id)
def test_run_json_matches_files(run_json: Path):
    meta = json.loads(run_json.read_text())
    d = run_json.parent
    missing = REQUIRED - set(meta)
    assert not missing, f"{run_json}: missing keys {sorted(missing)}"
    assert meta["schema"] == 1 and meta["status"] == "ok"
    tmeta = (meta["trace"] or {}).get("metadata")
    listed = [e for e in (meta["trace"], tmeta, meta["uart"], *meta["logic"]) if e]
    for ent in listed:
        f = d / ent["file"]
        assert f.is_file(), f"{f} listed in run.json but missing"
        assert sha256_of(f) == ent["sha256"], f"{f}: sha256 differs from run.json"
    names = {e["file"] for e in listed} | {"run.json", "README.md"}
    extra = {p.name for p in d.iterdir()} - names
    assert not extra, f"{d}: files not listed in run.json: {sorted(extra)}"
    assert (d / "README.md").is_file()
    if meta["trace"]:
        assert meta["trace"]["overflow"] is False
        assert meta["trace"]["format"] in ("systemview", "tracex", "ctf")
        head = (d / meta["trace"]["file"]).read_bytes()[:4]
        if meta["trace"]["format"] == "ctf":  # a CTF stream carries its metadata beside it
            assert (d / meta["trace"]["metadata"]["file"]).read_bytes().startswith(b"/* CTF 1.8 */")
        elif meta["trace"]["format"] == "systemview":
            assert head.startswith(b";"), "SystemView file without the ';' text header"
        else:
            assert head in (b"BTXT", b"TXTB"), f"TraceX file starts with {head!r}"


@pytest.mark.parametrize("run_json", RUNS, ids=_id)
def test_logic_channels_are_site_names(run_json: Path):
    meta = json.loads(run_json.read_text())
    names = [lg["profile"]["name"] for lg in meta["logic"]]
    # the ideal (1 GS/s) profile, when recorded, comes first as logic.sr; every other one is
    # logic-<profile>.sr (board-speed runs have only la100 and la24)
    assert "ideal" not in names or names.index("ideal") == 0
    assert [lg["file"] for lg in meta["logic"]] == [
        "logic.sr" if n == "ideal" else f"logic-{n}.sr" for n in names]
    site_channels = {s["channel"] for s in meta["sites"] if s["channel"]}
    assert site_channels <= SITE_NAMES and site_channels, "no site channel in the capture"
    for lg in meta["logic"]:
        with zipfile.ZipFile(run_json.parent / lg["file"]) as z:
            md = z.read("metadata").decode()
        prof = lg["profile"]
        if meta["board"].startswith("qemu_"):  # the virtual analyzer writes its profile into the file
            assert f"profile {prof['name']}: samplerate={prof['samplerate']} " in md
        probes = re.findall(r"^probe\d+=(.+)$", md, re.M)
        assert probes == [c["name"] for c in meta["channels"]]
        assert set(probes) - site_channels <= {"uart.tx", "status.done", "status.fail"} | {
            p for p in probes if re.fullmatch(r"PG\d+", p)
        }
