"""End to end: build the VLA plugin and a bare-metal probe, run QEMU netduinoplus2 with icount, check the
pin edges against the probe's instruction counts, the .sr against sigrok-cli, and capture.py's folder.

Needs gcc, arm-none-eabi-gcc and qemu-system-arm (tools/install-system-deps.sh); fails in CI without them,
skips elsewhere. Each QEMU run takes well under a second."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import need_tool

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "firmware" / "tools"))

import capture as cap_mod  # noqa: E402
from vla.convert import channels_from_log, write_profile  # noqa: E402
from vla.edgelog import gpio_levels, read_edge_log, uart_bytes  # noqa: E402
from vla.profiles import PROFILES  # noqa: E402

pytestmark = pytest.mark.qemu
PROBE = Path(__file__).parent / "vla_probe" / "probe.S"


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> Path:
    gcc = need_tool(os.environ.get("CC", "gcc"))
    out = tmp_path_factory.mktemp("vla") / "vla.so"
    subprocess.run(
        [
            gcc,
            "-O2",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-shared",
            "-fPIC",
            "-fvisibility=hidden",
            "-o",
            str(out),
            str(ROOT / "firmware" / "tools" / "vla" / "vla.c"),
        ],
        check=True,
    )
    return out


def build_probe(tmp: Path, spin: int) -> Path:
    cc = need_tool("arm-none-eabi-gcc")
    elf = tmp / f"probe{spin}.elf"
    subprocess.run(
        [
            cc,
            "-mcpu=cortex-m4",
            "-mthumb",
            "-nostdlib",
            f"-DSPIN={spin}",
            "-x",
            "assembler-with-cpp",
            str(PROBE),
            "-Wl,-Ttext=0x08000000",
            "-Wl,-ereset",
            "-o",
            str(elf),
        ],
        check=True,
    )
    return elf


def run_probe(plugin: Path, elf: Path, work: Path) -> Path:
    qemu = need_tool("qemu-system-arm")
    work.mkdir(exist_ok=True)
    cmd = [qemu, *cap_mod.qemu_flags(0), "-kernel", str(elf), "-plugin", f"{plugin},out=vla.edges"]
    subprocess.run(cmd, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=True)
    return work / "vla.edges"


@pytest.mark.parametrize("spin", [100, 37])
def test_pin_edges_at_instruction_spacing(plugin, tmp_path, spin):
    log = read_edge_log(run_probe(plugin, build_probe(tmp_path, spin), tmp_path / "w"))
    r = log.records
    assert np.all(r["flags"] == 0)
    # shift=0: virtual ns == instructions executed, up to the constant boot offset
    assert len(set((r["vt_ns"].astype(np.int64) - r["icount"].astype(np.int64)).tolist())) == 1
    levels, _ = gpio_levels(log)
    pg2 = levels[2]
    assert len(pg2) == 8
    d = np.diff(pg2)
    # probe.S: set -> clear runs movs + SPIN x (subs, bne) + str;
    # clear -> set also runs the outer loop's subs + bne
    assert d[0::2].tolist() == [2 * spin + 2] * 4
    assert d[1::2].tolist() == [2 * spin + 4] * 3
    # ODR store sets PG3+PG4 at once; the halfword BSRR reset clears PG3 two instructions later (movs, strh)
    assert levels[3][0] == levels[4][0] and levels[3][1] - levels[3][0] == 2
    t, data = uart_bytes(log)
    assert bytes(data.tolist()) == b"CT_DONE ok=1 fail=0\n"
    assert (tmp_path / "w" / "uart.log").read_bytes() == b"CT_DONE ok=1 fail=0\n"


def test_sr_matches_plugin_edges_in_sigrok_cli(plugin, tmp_path):
    sigrok = need_tool("sigrok-cli")
    log = read_edge_log(run_probe(plugin, build_probe(tmp_path, 100), tmp_path / "w"))
    cap = channels_from_log(log)
    out = tmp_path / "logic.sr"
    write_profile(cap, PROFILES["ideal"], out)
    vcd = subprocess.run(
        [sigrok, "-i", str(out), "-O", "vcd"], capture_output=True, text=True, check=True
    ).stdout
    ids = {}
    for line in vcd.splitlines():
        if line.startswith("$var wire 1 "):
            _, _, _, ident, name, _ = line.split()
            ids[ident] = name
    got: dict[str, list[int]] = {n: [] for n in ids.values()}
    for line in vcd.splitlines():
        if line.startswith("#"):
            t, *vals = line[1:].split()
            for v in vals:
                if int(t):
                    got[ids[v[1:]]].append(int(t))
    for c in cap.channels:
        assert got[c.name] == c.edges_ns.tolist(), c.name
    dec = subprocess.run(
        [sigrok, "-i", str(out), "-P", "uart:rx=uart.tx:baudrate=115200", "-A", "uart=rx-data"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert bytes(int(x.split()[-1], 16) for x in dec.splitlines()) == b"CT_DONE ok=1 fail=0\n"


def test_capture_folder_is_complete_and_reproducible(plugin, tmp_path, monkeypatch):
    monkeypatch.setattr(cap_mod, "PLUGIN", plugin)
    elf = build_probe(tmp_path, 50)
    spec = cap_mod.RunSpec(
        "baremetal", "vlaprobe", profiles=(PROFILES["ideal"], PROFILES["la100j"]), timeout_s=60
    )
    a = cap_mod.capture(spec, tmp_path / "a", "r1", elf=elf)
    b = cap_mod.capture(spec, tmp_path / "b", "r1", elf=elf)
    meta = json.loads((a / "run.json").read_text())
    assert meta["status"] == "ok" and meta["done"] == {"ok": 1, "fail": 0}
    assert [lg["file"] for lg in meta["logic"]] == ["logic.sr", "logic-la100j.sr"]
    assert meta["logic"][1]["profile"]["jitter_ns"] == 2.0
    assert meta["result_lines"] == ["CT_DONE ok=1 fail=0"]
    assert cap_mod.verify(tmp_path / "a") == []
    for f in ("logic.sr", "logic-la100j.sr", "uart.log"):
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    assert sorted(p.name for p in a.iterdir()) == [
        "README.md",
        "logic-la100j.sr",
        "logic.sr",
        "run.json",
        "uart.log",
    ]
    (a / "uart.log").write_text("tampered")
    assert any("uart.log: sha256 differs" in p for p in cap_mod.verify(tmp_path / "a"))


def test_failed_run_is_not_left_looking_complete(plugin, tmp_path, monkeypatch):
    monkeypatch.setattr(cap_mod, "PLUGIN", plugin)
    elf = build_probe(tmp_path, 10)
    spec = cap_mod.RunSpec("baremetal", "vlaprobe", timeout_s=60)
    monkeypatch.setattr(cap_mod, "DONE_RE", __import__("re").compile(r"^NEVER_PRINTED", __import__("re").M))
    with pytest.raises(cap_mod.CaptureError, match="no CT_DONE sentinel"):
        cap_mod.capture(spec, tmp_path, "r1", elf=elf)
    parent = tmp_path / "qemu_netduinoplus2" / "baremetal" / "vlaprobe"
    assert sorted(p.name for p in parent.iterdir()) == ["r1.failed"]
    meta = json.loads((parent / "r1.failed" / "run.json").read_text())
    assert meta["status"] == "failed" and "CT_DONE" in meta["failure"]


def test_timeout_is_reported(plugin, tmp_path, monkeypatch):
    monkeypatch.setattr(cap_mod, "PLUGIN", plugin)
    spin_forever = tmp_path / "hang.S"
    spin_forever.write_text(
        ".syntax unified\n.thumb\n.text\n.word 0x20010000\n.word r\n.thumb_func\n.global r\nr: b r\n"
    )
    cc = need_tool("arm-none-eabi-gcc")
    elf = tmp_path / "hang.elf"
    subprocess.run(
        [
            cc,
            "-mcpu=cortex-m4",
            "-mthumb",
            "-nostdlib",
            str(spin_forever),
            "-Wl,-Ttext=0x08000000",
            "-Wl,--entry=r",
            "-o",
            str(elf),
        ],
        check=True,
    )
    spec = cap_mod.RunSpec("baremetal", "hang", timeout_s=1.0)
    with pytest.raises(cap_mod.CaptureError, match="timeout: the run did not reach its CT_DONE sentinel"):
        cap_mod.capture(spec, tmp_path, "r1", elf=elf)
    assert (tmp_path / "qemu_netduinoplus2" / "baremetal" / "hang" / "r1.failed" / "run.json").exists()


def _site_edges(sr: Path) -> dict[str, list[int]]:
    import trace_parsers

    tr = trace_parsers.open_trace(sr)
    ev = tr.to_pandas()
    return {
        c.name: ev.loc[ev["marker"] == c.index, "ts"].tolist() for c in tr.channels if c.name != "uart.tx"
    }


@pytest.mark.slow
def test_baremetal_reference_capture_reproduces(plugin, tmp_path, monkeypatch):
    """Rebuild and rerun the committed bare-metal reference run (the one CI can build): with the same ELF
    every data file is bit-identical. From another source revision the image differs (it embeds and
    prints its git revision, so boot takes a different number of instructions): then every site keeps
    its edge count and its edge-to-edge intervals; a failure means the reference is stale (make campaign)."""
    ref = ROOT / "captures" / "qemu_netduinoplus2" / "baremetal" / "isr_latency" / "ref"
    if not (ref / "run.json").exists():
        pytest.skip("no committed bare-metal reference capture")
    for tool in ("cmake", "ninja", "arm-none-eabi-gcc", "qemu-system-arm"):
        need_tool(tool)
    monkeypatch.setattr(cap_mod, "PLUGIN", plugin)
    monkeypatch.setenv("FW_BUILD", str(tmp_path / "fw"))
    spec = next(s for s, _ in cap_mod.load_campaign() if (s.rtos, s.app_dir) == ("baremetal", "isr_latency"))
    new = cap_mod.capture(spec, tmp_path / "out", "ref")
    old_meta = json.loads((ref / "run.json").read_text())
    new_meta = json.loads((new / "run.json").read_text())
    assert [lg["file"] for lg in new_meta["logic"]] == [lg["file"] for lg in old_meta["logic"]]
    if new_meta["firmware"]["elf_sha256"] == old_meta["firmware"]["elf_sha256"]:
        for a, b in zip(new_meta["logic"] + [new_meta["uart"]], old_meta["logic"] + [old_meta["uart"]]):
            assert a["sha256"] == b["sha256"], a["file"]
        for lg in old_meta["logic"]:
            assert _site_edges(new / lg["file"]) == _site_edges(ref / lg["file"]), lg["file"]
    a, b = _site_edges(new / "logic.sr"), _site_edges(ref / "logic.sr")
    assert a.keys() == b.keys()
    for name in a:
        assert np.diff(a[name]).tolist() == np.diff(b[name]).tolist(), f"{name}: stale reference capture?"
