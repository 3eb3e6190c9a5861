"""Every committed capture's README "Reproduce" line runs as printed: make expands it to a capture.py command
line that capture.py's own parser accepts and that asks for exactly the run recorded in run.json. The slow
test runs a few of them for real (CI: one per RTOS plus the long FreeRTOS ISR run) and compares every file
byte for byte with the committed capture (run.json: all but wall time and creation date)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import need_tool
from tests.firmware.conftest import RTOS_DEPS, rtos_sources
from tests.firmware.zephyr._build import zephyr_ws

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "captures"
sys.path.insert(0, str(ROOT / "firmware" / "tools"))
import capture as cap_mod  # noqa: E402

READMES = sorted(p for p in CAPTURES.rglob("README.md") if (p.parent / "run.json").is_file())
REPRO_RE = re.compile(r"^Reproduce\b[^\n]*\n+```\n(?P<cmd>[^\n]+)\n```", re.M)


def reproduce_line(readme: Path) -> str:
    m = REPRO_RE.search(readme.read_text())
    assert m, f"{readme}: no Reproduce block"
    return m.group("cmd")


def capture_argv(line: str, **extra: str) -> list[str]:
    """The capture.py arguments that `make` runs for a README line (make -n: expanded, not executed)."""
    words = shlex.split(line)
    assert words[:2] == ["make", "capture"], line
    assert all(re.fullmatch(r"[A-Z_]+=.*", w, re.S) for w in words[2:]), line
    extra_args = [f"{k}={v}" for k, v in extra.items()]
    p = subprocess.run(["make", "-n", "-s", "-C", str(ROOT), *words[1:], *extra_args],
                       capture_output=True, text=True, check=True)
    recipe = " ".join(p.stdout.replace("\\\n", " ").splitlines())
    argv = shlex.split(recipe[recipe.index("firmware/tools/capture.py") :])
    return argv[1:]


def rel(readme: Path) -> str:
    return str(readme.parent.relative_to(CAPTURES))


def test_there_are_capture_readmes():
    assert len(READMES) >= 19


@pytest.mark.parametrize("readme", READMES, ids=rel)
def test_reproduce_line_parses_to_the_recorded_run(readme):
    need_tool("make")
    meta = json.loads((readme.parent / "run.json").read_text())
    args = cap_mod.build_parser().parse_args(capture_argv(reproduce_line(readme)))
    spec = cap_mod.spec_from_args(args)
    assert (spec.rtos, spec.app, spec.variant or None) == (meta["rtos"], meta["app"], meta["variant"])
    assert args.run_id == meta["run_id"] == readme.parent.name
    assert args.out == CAPTURES
    assert readme.parent == CAPTURES / meta["board"] / spec.rtos / spec.app_dir / args.run_id
    for k, v in spec.options.items():  # asked-for options; run.json also lists the defaults in effect
        assert str(meta["options"][k]) == v or meta["options"][k] == int(v, 0), k
    assert [p.name for p in spec.profiles] == [lg["profile"]["name"] for lg in meta["logic"]]
    assert [p.as_json() for p in spec.profiles] == [lg["profile"] for lg in meta["logic"]]
    assert spec.shift == meta.get("time_scale", {"icount_shift": 0})["icount_shift"]


def test_a_dash_option_value_is_not_taken_for_a_flag():
    """The form the READMEs printed before (`--opts "-DCT_NTASKS=2"`, from OPTS='-DCT_NTASKS=2') is an
    argparse error; `make capture` passes `--opts=...`, which takes any value."""
    ap = cap_mod.build_parser()
    with pytest.raises(SystemExit):
        ap.parse_args(["run", "--rtos", "freertos", "--app", "ctx_switch", "--opts", "-DCT_NTASKS=2"])
    argv = capture_argv("make capture RTOS=freertos APP=ctx_switch OPTS='-DCT_NTASKS=2 -DCT_ITERATIONS=5'")
    spec = cap_mod.spec_from_args(ap.parse_args(argv))
    assert spec.options == {"CT_NTASKS": "2", "CT_ITERATIONS": "5"}


def test_a_readme_line_for_another_run_is_caught(tmp_path):
    """The comparison above fails for a line that asks for something else (wrong shift, option, run id)."""
    readme = next(r for r in READMES if "freertos/isr_latency/ref" in rel(r) + "/")
    line = reproduce_line(readme)
    meta = json.loads((readme.parent / "run.json").read_text())
    bads = (line + " QEMU_SHIFT=3", line.replace("RUN_ID=ref", "RUN_ID=x"), line + " OPTS=CT_ITERATIONS=7")
    for bad in bads:
        spec = cap_mod.spec_from_args(cap_mod.build_parser().parse_args(capture_argv(bad)))
        args = cap_mod.build_parser().parse_args(capture_argv(bad))
        assert (spec.shift, args.run_id, spec.options.get("CT_ITERATIONS", "200")) != (
            meta["time_scale"]["icount_shift"], meta["run_id"], str(meta["options"]["CT_ITERATIONS"]))


# ---- slow: record a few again, exactly as their README says, and compare byte for byte ---------------------

REPRODUCED = [
    "baremetal/isr_latency/ref",
    "freertos/isr_latency/ref",
    "threadx/isr_latency/ref",
    "freertos/isr_latency-long/ref",
    "freertos/isr_latency/board",
    "threadx/isr_latency-negctl-delay/ref",
    "zephyr/ctx_switch-n2/ref",  # Zephyr from CT_DEPS_DIR/zephyrproject (firmware/zephyr/zephyr.mk)
    "zephyr/tm_cooperative/ref",  # Thread-Metric on Zephyr: + the upstream test from CT_DEPS_DIR/threadx
    "ucos3/isr_latency/ref",  # µC/OS-III + SEGGER's µC/OS SystemView glue (issue 35)
    "ucos2/isr_latency/ref",  # µC/OS-II, the same recorder
    "riot/ctx_switch-n2/ref",  # RIOT from CT_DEPS_DIR/RIOT (firmware/ports/riot/riot.mk; issue 35)
    "freertos/finegrained-c/board",  # the fine-grained tests (firmware/apps/finegrained; issue 34 item 3)
    "freertos/rtosbench-mutex/board",  # RTOSBench: + the upstream test from CT_DEPS_DIR/RTOSBench (issue 34)
]
VOLATILE = (("qemu", "wall_s"), ("created_utc",))


def _stable(meta: dict) -> dict:
    meta = json.loads(json.dumps(meta))
    for path in VOLATILE:
        d = meta
        for k in path[:-1]:
            d = d[k]
        d.pop(path[-1], None)
    return meta


def compare_capture(new: Path, ref: Path) -> list[str]:
    """Files of ``ref`` that ``new`` does not reproduce byte for byte (run.json: but VOLATILE)."""
    bad = []
    names = sorted(p.name for p in ref.iterdir() if p.is_file())
    if sorted(p.name for p in new.iterdir() if p.is_file()) != names:
        bad.append(f"file list {sorted(p.name for p in new.iterdir())} != {names}")
    for n in names:
        a, b = new / n, ref / n
        if not a.is_file():
            continue
        if n == "run.json":
            if _stable(json.loads(a.read_text())) != _stable(json.loads(b.read_text())):
                bad.append(n)
        elif a.read_bytes() != b.read_bytes():
            bad.append(n)
    return bad


def test_compare_capture_sees_a_changed_byte(tmp_path):
    ref = CAPTURES / "qemu_netduinoplus2" / "baremetal" / "calib" / "ref"
    new = tmp_path / "c"
    new.mkdir()
    for p in ref.iterdir():
        (new / p.name).write_bytes(p.read_bytes())
    assert compare_capture(new, ref) == []
    meta = json.loads((new / "run.json").read_text())
    meta["qemu"]["wall_s"] += 1
    meta["created_utc"] = "2000-01-01T00:00:00Z"
    (new / "run.json").write_text(json.dumps(meta))
    assert compare_capture(new, ref) == []
    meta["vla"]["end_ns"] += 1
    (new / "run.json").write_text(json.dumps(meta))
    data = bytearray((new / "uart.log").read_bytes())
    data[-2] ^= 1
    (new / "uart.log").write_bytes(bytes(data))
    assert compare_capture(new, ref) == ["run.json", "uart.log"]


@pytest.mark.timeout(1800)  # builds + QEMU; the long run alone converts 2.9 s of 1 GS/s capture
@pytest.mark.slow
@pytest.mark.parametrize("cid", REPRODUCED)
def test_committed_capture_is_reproduced_bit_for_bit(cid, tmp_path):
    ref = CAPTURES / "qemu_netduinoplus2" / cid
    assert (ref / "run.json").is_file(), f"{cid}: not committed"
    for tool in ("make", "cmake", "ninja", "arm-none-eabi-gcc", "qemu-system-arm", "gcc"):
        need_tool(tool)
    rtos = cid.split("/")[0]
    if rtos in RTOS_DEPS:
        rtos_sources(rtos)
    if rtos == "zephyr":
        zephyr_ws()  # skips (fails in CI) without the Zephyr sources
    out, fw = tmp_path / "captures", tmp_path / "fw"
    line = reproduce_line(ref / "README.md")
    cmd = f"{line} CAPTURE_OUT={out} FW_BUILD={fw} VLA_SO={tmp_path / 'vla.so'}"
    p = subprocess.run(["bash", "-c", cmd], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    new = out / "qemu_netduinoplus2" / cid
    assert compare_capture(new, ref) == [], f"{cid}: differs from the committed capture"


# The Zephyr Thread-Metric runs are 30 images of ~35 s each: the rebuild check below samples them. The traced
# kind is rebuilt (and rerun) by the reproduce test above (zephyr/tm_cooperative/ref); these stand for the
# untraced kinds with the stack guard and with time slicing. The others differ from them only in the test
# source (thread_metric/, built for every run of the same app) or in an option these cover.
REBUILT_TM_SAMPLE = ("zephyr/tm_interrupt-mpu-untraced/ref",)
# The other Zephyr images (~50 s each on the 2-core CI machine: all 21 took ~15 of CI's minutes) are sampled
# too, one of each kind of build: CTF, SystemView with the MPU guard, untraced. All of them share
# firmware/zephyr and the pinned tree, so a source change shows in every one; ctx_switch-n2 is moreover
# rebuilt and rerun bit for bit by the reproduce test above (the load and FFT apps are the FreeRTOS and
# ThreadX ones, rebuilt in full there).
REBUILT_ZEPHYR_SAMPLE = ("zephyr/calib-ctf/ref", "zephyr/isr_latency-mpu/ref",
                         "zephyr/ctx_switch-n2-untraced/ref")
# The FreeRTOS and ThreadX Thread-Metric images (8 each, ~5 s each) differ only in the test source, which
# thread_metric/ shares: two per RTOS stand for them (the interrupt test, the only one with an ISR, and one
# task-only test). Their sizes and per-test options are checked for every run by the reproduce-line test.
REBUILT_TM_HOST_SAMPLE = ("freertos/tm_interrupt-cubeide/ref", "freertos/tm_message-cubeide/ref",
                          "threadx/tm_interrupt/ref", "threadx/tm_message/ref")


# The µC/OS images (~11 s each, issue 35: CI adds at most ~2 minutes for the µC/OS ports) are sampled too:
# each kernel's isr_latency is rebuilt and rerun bit for bit by the reproduce test above; ucos3's
# ctx_switch-n2 (the app µC/OS-II cannot run) stands for the others (same ports, kernels and recorder; the
# apps are the FreeRTOS and ThreadX ones, rebuilt in full).
REBUILT_UCOS_SAMPLE = ("ucos3/ctx_switch-n2/ref",)
# RIOT (issue 35): ctx_switch-n2 is rebuilt and rerun by the reproduce test; calib and fft_workload stand for
# the others (same port, tree and recorder; ~20 s for RIOT's own objects, then ~5 s per image)
REBUILT_RIOT_SAMPLE = ("riot/calib/ref", "riot/fft_workload-f1/ref")
SAMPLED_RTOSES = ("zephyr", "ucos3", "ucos2", "riot")


# The fine-grained images (issue 34 item 3: 47, ~5-15 s each) differ only in one-letter test and trace
# options: tests/firmware/test_finegrained.py rebuilds one traced image per RTOS (and boots it); these stand
# for the untraced kinds (FreeRTOS and ThreadX; the H one also carries H's own options). The µC/OS and RIOT
# ones (issue 35) are traced only, with one option set: test_finegrained.py's sampled image per RTOS covers
# them.
REBUILT_FG_SAMPLE = ("freertos/finegrained-h-untraced/board", "threadx/finegrained-b-untraced/board")
#: RTOSBench's images (one per test and build): a sample besides the reproduced FreeRTOS mutex one
REBUILT_RB_SAMPLE = ("threadx/rtosbench-sem/board", "freertos/rtosbench-round_robin-untraced/board")


def rebuilt(spec, rid: str) -> bool:
    """Whether the rebuild check builds this campaign run's image: every FreeRTOS, ThreadX and bare-metal
    one but those the reproduce test builds anyway, ctx_switch n5/n10 (n2 stands for them), Thread-Metric's
    and the fine-grained and RTOSBench ones (sampled), and the Zephyr, µC/OS and RIOT ones sampled."""
    if spec.app == "finegrained":
        return f"{spec.rtos}/{spec.app_dir}/{rid}" in REBUILT_FG_SAMPLE
    if spec.app == "rtosbench" and spec.rtos != "zephyr":
        return f"{spec.rtos}/{spec.app_dir}/{rid}" in REBUILT_RB_SAMPLE
    if spec.rtos == "zephyr":
        return f"{spec.rtos}/{spec.app_dir}/{rid}" in REBUILT_TM_SAMPLE + REBUILT_ZEPHYR_SAMPLE
    if spec.rtos in SAMPLED_RTOSES:
        return f"{spec.rtos}/{spec.app_dir}/{rid}" in REBUILT_UCOS_SAMPLE + REBUILT_RIOT_SAMPLE
    if spec.app.startswith("tm_"):
        return f"{spec.rtos}/{spec.app_dir}/{rid}" in REBUILT_TM_HOST_SAMPLE
    if spec.app == "ctx_switch" and spec.variant in ("n5", "n10"):
        return False  # n2 stands for them: the same sources, CT_NTASKS only
    return image_key(spec) not in _reproduced_images()


def _reproduced_images() -> set[tuple]:
    """The images the reproduce test above builds (and reruns bit for bit): the rebuild check skips them."""
    runs = {f"{s.rtos}/{s.app_dir}/{rid}": s for s, rid in cap_mod.load_campaign()}
    return {image_key(runs[name]) for name in REPRODUCED}


def test_rebuild_sample_names_committed_runs():
    """Every sampled name is a run of the campaign (a renamed run cannot drop out of the check unseen), and
    only the kinds ``rebuilt`` names are left out."""
    runs = cap_mod.load_campaign()
    names = {f"{s.rtos}/{s.app_dir}/{rid}" for s, rid in runs}
    assert set(REBUILT_TM_SAMPLE) <= names and set(REBUILT_ZEPHYR_SAMPLE) <= names
    assert set(REBUILT_UCOS_SAMPLE) <= names and set(REBUILT_RIOT_SAMPLE) <= names
    assert set(REBUILT_TM_HOST_SAMPLE) <= names
    skipped = {f"{s.rtos}/{s.app_dir}/{rid}" for s, rid in runs if not rebuilt(s, rid)}
    reproduced = _reproduced_images()
    assert skipped and all(n.split("/")[0] in SAMPLED_RTOSES or "/finegrained-" in n or "/tm_" in n
                           or "/rtosbench-" in n
                           or "/ctx_switch-n5/" in n or "/ctx_switch-n10/" in n
                           or image_key(s) in reproduced for s, rid in runs
                           if (n := f"{s.rtos}/{s.app_dir}/{rid}") in skipped)
    assert set(REBUILT_FG_SAMPLE) <= names and set(REBUILT_RB_SAMPLE) <= names


def _have_zephyr() -> bool:
    """Zephyr sources present (CT_DEPS_DIR/zephyrproject); in CI their absence fails the test."""
    try:
        zephyr_ws()
    except pytest.skip.Exception:
        return False
    return True


@pytest.mark.timeout(1800)  # builds + QEMU; the long run alone converts 2.9 s of 1 GS/s capture
@pytest.mark.slow
def test_every_committed_capture_image_rebuilds_identically(tmp_path, monkeypatch):
    """Every run of captures/campaign.toml (some kinds sampled: ``rebuilt``): the image
    built from this checkout has the committed elf_sha256 (no QEMU run: catches a capture left stale by a
    change to the firmware sources)."""
    for tool in ("make", "cmake", "ninja", "arm-none-eabi-gcc"):
        need_tool(tool)
    for rtos in RTOS_DEPS:
        rtos_sources(rtos)
    with_zephyr = _have_zephyr()
    monkeypatch.setenv("FW_BUILD", str(tmp_path / "fw"))
    runs = [(spec, rid) for spec, rid in cap_mod.load_campaign()
            if (spec.rtos != "zephyr" or with_zephyr) and rebuilt(spec, rid)]
    built = build_images(spec for spec, _ in runs)
    stale = []
    for spec, rid in runs:
        run_json = CAPTURES / cap_mod.BOARD / spec.rtos / spec.app_dir / rid / "run.json"
        meta = json.loads(run_json.read_text())
        if built[image_key(spec)] != meta["firmware"]["elf_sha256"]:
            stale.append(f"{spec.rtos}/{spec.app_dir}/{rid}")
    assert not stale, f"stale captures (rerun `make campaign ONLY=..`): {stale}"


def image_key(spec) -> tuple:
    """What decides a campaign run's image: two runs with the same key share one build."""
    return (spec.rtos, spec.app, spec.variant, tuple(spec.options.items()))


def build_images(specs, workers: int = 2) -> dict[tuple, str]:
    """Build every distinct image of ``specs`` once; ``image_key`` -> the ELF's SHA-256.

    Images that share a build folder (``rtos``/``app_dir``) are built one after the other in that
    folder, and different folders ``workers`` at a time (the serial parts of a build, such as a
    Zephyr configure, overlap with another build: ~20 % off the Zephyr images on 2 cores). Zephyr
    folders go first: they take longest."""
    folders: dict[tuple, dict[tuple, Any]] = {}
    for spec in specs:
        folders.setdefault((spec.rtos, spec.app_dir), {}).setdefault(image_key(spec), spec)

    def build(group: dict[tuple, Any]) -> list[tuple[tuple, str]]:
        return [(key, cap_mod.sha256_file(cap_mod.build_firmware(s))) for key, s in group.items()]

    order = sorted(folders, key=lambda f: f[0] != "zephyr")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = pool.map(build, [folders[f] for f in order])
        return dict(pair for pairs in done for pair in pairs)


def test_one_count_of_runs_everywhere():
    """README.md and captures/README.md state one number of campaign runs: that of captures/campaign.toml,
    every one of which is committed."""
    runs = cap_mod.load_campaign()
    missing = [f"{s.rtos}/{s.app_dir}/{rid}" for s, rid in runs
               if not (CAPTURES / cap_mod.BOARD / s.rtos / s.app_dir / rid / "run.json").is_file()]
    assert not missing, f"campaign runs not committed: {missing}"
    for doc in (ROOT / "README.md", CAPTURES / "README.md"):
        said = {int(n) for n in re.findall(r"holds (?:\*\*)?(\d+) (?:campaign )?runs", doc.read_text())}
        assert said == {len(runs)}, f"{doc.name} says {sorted(said)} runs, campaign.toml has {len(runs)}"


def test_build_images_never_shares_a_folder_between_two_builds(monkeypatch):
    """``build_images`` (the rebuild check's two workers): every distinct image is built once, and
    no build folder is used by two builds at the same time (they would overwrite each other's
    objects). A fake build sleeps so that overlaps show."""
    import threading
    import time
    from types import SimpleNamespace

    busy: set[tuple] = set()
    clashes, calls = [], []
    lock = threading.Lock()

    def fake_build(spec):
        folder = (spec.rtos, spec.app_dir)
        with lock:
            if folder in busy:
                clashes.append(folder)
            busy.add(folder)
            calls.append(image_key(spec))
        time.sleep(0.02)
        with lock:
            busy.discard(folder)
        return spec

    monkeypatch.setattr(cap_mod, "build_firmware", fake_build)
    monkeypatch.setattr(cap_mod, "sha256_file", lambda spec: f"sha-{image_key(spec)}")

    def spec(rtos, app, **options):
        return SimpleNamespace(rtos=rtos, app=app, variant="", app_dir=app, options=options)

    specs = [spec("freertos", "isr_latency-long"), spec("freertos", "isr_latency-long", CT_N=2),
             spec("freertos", "isr_latency-long"), spec("zephyr", "calib"), spec("threadx", "calib"),
             spec("zephyr", "calib", CT_LOAD=1), spec("zephyr", "periodic")]
    built = build_images(specs, workers=3)
    assert clashes == []
    assert sorted(calls) == sorted(built) and len(built) == 6
    assert all(v == f"sha-{k}" for k, v in built.items())
