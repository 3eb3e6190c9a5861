#!/usr/bin/env python3
"""One-command paired capture: firmware image -> QEMU netduinoplus2 (icount, semihosting, VLA plugin) ->
capture folder with the trace, one ``.sr`` per analyzer profile, ``uart.log``, ``run.json`` and README.

    python firmware/tools/capture.py run --rtos freertos --app ctx_switch --opts CT_NTASKS=5 --la ideal,la100
    python firmware/tools/capture.py run --rtos freertos --app isr_latency --shift 3 --la la100,la24
    python firmware/tools/capture.py campaign [--only freertos/ctx_switch-n2] [--only zephyr] [--out DIR]
    python firmware/tools/capture.py verify captures/          # run.json hashes match the files

The folder convention and run.json (schema 1) are documented in captures/README.md. A run is written
into a hidden temporary folder and renamed at the end; a failed run ends up as ``<run-id>.failed/`` with
``status: failed`` and the reason, never as a folder that looks complete.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vla import campaign as _campaign  # noqa: E402
from vla.campaign import DEFAULT_LA, RunSpec, negative_control, parse_opts, time_scale  # noqa: E402
from vla.convert import UART_CHANNEL, channels_from_log, write_profile  # noqa: E402
from vla.edgelog import read_edge_log  # noqa: E402
from vla.profiles import PROFILES, parse_profile  # noqa: E402
from vla.sites import read_sites  # noqa: E402

__all__ = ["RunSpec", "capture", "load_campaign", "select_runs", "verify", "build_parser", "spec_from_args"]

ROOT = Path(__file__).resolve().parents[2]
BOARD = "qemu_netduinoplus2"
MACHINE = "netduinoplus2"
QEMU = os.environ.get("QEMU", "qemu-system-arm")
PLUGIN = Path(os.environ.get("VLA_PLUGIN", ROOT / "firmware" / "build" / "vla" / "vla.so"))
CAMPAIGN = ROOT / "captures" / "campaign.toml"
BAUD = 115200
# TIM2 under QEMU counts QEMU_CLOCK_VIRTUAL nanoseconds (stm32f2xx_timer, clock-frequency 1 GHz) at every
# icount shift: 1 tick per instruction at shift 0, 8 per instruction at shift 3. The firmware says so too
# (CT_INFO ts_hz); this is the fallback for images that do not.
TS_HZ = 1_000_000_000
RESULT_RE = re.compile(r"^(CT_RESULT|CT_FAIL|CT_DONE|CT_INFO)\b.*$", re.M)
DONE_RE = re.compile(r"^CT_DONE ok=(\d+) fail=(\d+)", re.M)
TRACE_RE = re.compile(
    r"^CT_TRACE file=(?P<file>\S+) events=(?P<events>\d+) bytes=(?P<bytes>\d+) "
    r"dropped=(?P<dropped>\d+)",
    re.M,
)
TS_HZ_RE = re.compile(r"^CT_INFO ts_hz=(\d+)", re.M)
SV_HEADER = (
    ";\n; Version     SEGGER SystemViewer V3.58\n; Author      crosstrace capture.py\n"
    "; Title       {title}\n;\n"
)


class CaptureError(RuntimeError):
    """A run that must not produce a capture; the message is the reason recorded in run.json."""


def sha256_file(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for blk in iter(lambda: f.read(1 << 20), b""):
            h.update(blk)
    return h.hexdigest()


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=False, capture_output=True, text=True, **kw)


def qemu_version() -> str:
    r = _run([QEMU, "--version"])
    m = re.search(r"version (\S+)(?: \(([^)]*)\))?", r.stdout)
    return f"{m.group(1)} ({m.group(2)})" if m and m.group(2) else (m.group(1) if m else "unknown")


def build_plugin(force: bool = False) -> Path:
    """Build vla.so with the host compiler if it is missing or older than its source."""
    src = ROOT / "firmware" / "tools" / "vla" / "vla.c"
    if force or not PLUGIN.exists() or PLUGIN.stat().st_mtime < src.stat().st_mtime:
        PLUGIN.parent.mkdir(parents=True, exist_ok=True)
        cc = os.environ.get("CC", "gcc")
        r = _run(
            [
                cc,
                "-O2",
                "-Wall",
                "-Wextra",
                "-shared",
                "-fPIC",
                "-fvisibility=hidden",
                "-o",
                str(PLUGIN),
                str(src),
            ]
        )
        if r.returncode:
            raise CaptureError(f"building the VLA plugin failed:\n{r.stderr}")
    return PLUGIN


def build_firmware(spec: RunSpec) -> Path:
    """``make fw RTOS= BOARD= APP= VARIANT= OPTS=`` (firmware/firmware.mk) into ``$FW_BUILD`` (default
    firmware/build; RTOS sources from ``$CT_DEPS_DIR``, see firmware/README.md); returns the image path."""
    if spec.rtos == "zephyr":
        return build_zephyr_firmware(spec)
    opts = " ".join(f"-D{k}={v}" for k, v in spec.options.items())
    fw_build = Path(os.environ.get("FW_BUILD", ROOT / "firmware" / "build"))
    fw_build = fw_build if fw_build.is_absolute() else ROOT / fw_build
    cmd = [
        "make",
        "-s",
        "-C",
        str(ROOT),
        "fw",
        f"RTOS={spec.rtos}",
        f"BOARD={BOARD}",
        f"APP={spec.app}",
        f"OPTS={opts}",
        f"FW_BUILD={fw_build}",
    ]
    if spec.variant:
        cmd.append(f"VARIANT={spec.variant}")
    r = _run(cmd)
    if r.returncode:
        raise CaptureError(
            f"firmware build failed ({' '.join(cmd[3:])}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}"
        )
    elf = fw_build / BOARD / spec.rtos / spec.app_dir / "ct.elf"
    if not elf.exists():
        raise CaptureError(f"firmware build succeeded but {elf} is missing")
    return elf


def build_zephyr_firmware(spec: RunSpec) -> Path:
    """Zephyr images: ``make fw-zephyr BOARD= APP= VARIANT= OPTS=`` (firmware/zephyr/zephyr.mk, Zephyr from
    ``$CT_DEPS_DIR/zephyrproject``), same output folder convention as ``make fw``."""
    opts = " ".join(f"-D{k}={v}" for k, v in spec.options.items())
    fw_build = Path(os.environ.get("FW_BUILD", ROOT / "firmware" / "build"))
    fw_build = fw_build if fw_build.is_absolute() else ROOT / fw_build
    # the top Makefile may not include zephyr.mk yet: name both makefiles then
    mk = [] if "zephyr/zephyr.mk" in (ROOT / "Makefile").read_text() else [
        "-f", "Makefile", "-f", "firmware/zephyr/zephyr.mk"]
    cmd = ["make", "-s", "-C", str(ROOT), *mk, "fw-zephyr", f"BOARD={BOARD}", f"APP={spec.app}",
           f"OPTS={opts}", f"FW_BUILD={fw_build}"]
    if spec.variant:
        cmd.append(f"VARIANT={spec.variant}")
    r = _run(cmd)
    if r.returncode:
        raise CaptureError(
            f"Zephyr firmware build failed ({' '.join(cmd[3:])}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}"
        )
    elf = fw_build / BOARD / "zephyr" / spec.app_dir / "ct.elf"
    if not elf.exists():
        raise CaptureError(f"firmware build succeeded but {elf} is missing")
    return elf


def _trace_format(path: Path) -> str:
    """Trace format by file name: .trx TraceX, .ctf a Zephyr CTF stream (stored with its TSDL ``metadata``,
    see :func:`ctf_metadata`), anything else (.SVDat) SystemView."""
    return {".trx": "tracex", ".ctf": "ctf"}.get(path.suffix.lower(), "systemview")


def ctf_metadata() -> Path:
    """The CTF metadata (TSDL) that describes the streams of the Zephyr images: Zephyr's own
    ``subsys/tracing/ctf/tsdl/metadata``. A CTF trace is its metadata plus its streams, so a capture
    stores it beside ``trace.ctf`` and stays readable (crosstrace, babeltrace2) without the sources."""
    deps = Path(os.environ.get("CT_DEPS_DIR") or ROOT / "firmware" / "third_party")
    path = deps / "zephyrproject" / "zephyr" / "subsys" / "tracing" / "ctf" / "tsdl" / "metadata"
    if not path.is_file():
        raise CaptureError(f"{path}: Zephyr's CTF metadata not found (set CT_DEPS_DIR)")
    return path


def elf_config(elf: Path) -> str:
    """The configuration string the firmware embeds in its ``.ct_config`` section ('' if absent)."""
    objcopy = os.environ.get("OBJCOPY", "arm-none-eabi-objcopy")
    out = elf.parent / (elf.name + ".ct_config.bin.tmp")
    r = _run([objcopy, f"--dump-section=.ct_config={out}", str(elf), os.devnull])
    try:
        if r.returncode or not out.exists():
            return ""
        return out.read_bytes().split(b"\0", 1)[0].decode("ascii", "replace").strip()
    finally:
        out.unlink(missing_ok=True)


def qemu_flags(shift: int) -> list[str]:
    return [
        "-M",
        MACHINE,
        "-nographic",
        "-monitor",
        "none",
        "-serial",
        "file:uart.log",
        "-semihosting-config",
        "enable=on,target=native",
        "-icount",
        f"shift={shift},sleep=off,align=off",
    ]


def run_qemu(elf: Path, work: Path, timeout_s: float, shift: int = 0) -> tuple[int, float]:
    """Run the image in ``work`` (semihosting files land there); returns (exit code, wall seconds)."""
    plugin = build_plugin()
    cmd = [QEMU, *qemu_flags(shift), "-kernel", str(elf), "-plugin", f"{plugin},out=vla.edges"]
    t0 = time.perf_counter()
    try:
        r = subprocess.run(
            cmd, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired as e:
        raise CaptureError(
            f"timeout: the run did not reach its CT_DONE sentinel within {timeout_s:g} s of wall time"
        ) from e
    wall = time.perf_counter() - t0
    (work / "qemu.stderr").write_bytes(r.stderr)
    return r.returncode, wall


def _trace_file(work: Path, uart: str) -> tuple[Path | None, str]:
    """The trace the firmware wrote by semihosting (named by its ``CT_TRACE file=`` line)."""
    m = TRACE_RE.search(uart)
    cands = [work / m.group("file")] if m and m.group("file") != "-" else []
    cands += sorted(work.glob("*.SVDat")) + sorted(work.glob("*.trx")) + sorted(work.glob("*.ctf"))
    for c in cands:
        if c.is_file():
            return c, _trace_format(c)
    return None, ""


def _trace_stats(uart: str) -> dict:
    """``CT_TRACE file= events= bytes= dropped=`` (firmware/README.md, console contract)."""
    m = TRACE_RE.search(uart)
    if not m:
        return {}
    return {
        "events": int(m.group("events")),
        "bytes": int(m.group("bytes")),
        "dropped": int(m.group("dropped")),
    }


def capture(
    spec: RunSpec, out_root: Path, run_id: str, elf: Path | None = None, sites_h: Path | None = None
) -> Path:
    """Build (unless ``elf``), run and convert; returns the finished capture folder."""
    dest_parent = out_root / BOARD / spec.rtos / spec.app_dir
    dest = dest_parent / run_id
    work = dest_parent / f".{run_id}.tmp-{os.getpid()}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    meta: dict = {
        "schema": 1,
        "board": BOARD,
        "rtos": spec.rtos,
        "rtos_version": "",
        "app": spec.app,
        "variant": spec.variant or None,
        "run_id": run_id,
        "options": _typed(spec.options),
        "time_scale": time_scale(spec.shift),
    }
    try:
        elf = build_firmware(spec) if elf is None else elf
        shutil.copyfile(elf, work / "ct.elf")
        _run_into(spec, work, meta, sites_h)
    except CaptureError as e:
        meta.update(status="failed", failure=str(e), created_utc=_utc())
        (work / "run.json").write_text(json.dumps(meta, indent=1) + "\n")
        failed = dest_parent / f"{run_id}.failed"
        if failed.exists():
            shutil.rmtree(failed)
        (work / "ct.elf").unlink(missing_ok=True)
        work.rename(failed)
        raise CaptureError(f"{spec.rtos}/{spec.app_dir}: {e} (details in {failed})") from None
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    if dest.exists():
        shutil.rmtree(dest)
    work.rename(dest)
    shutil.rmtree(dest_parent / f"{run_id}.failed", ignore_errors=True)  # an earlier failed attempt
    return dest


def _typed(opts: dict[str, str]) -> dict:
    return {k: int(v) if re.fullmatch(r"-?\d+", str(v)) else v for k, v in opts.items()}


def _utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _run_into(spec: RunSpec, work: Path, meta: dict, sites_h: Path | None) -> None:
    elf = work / "ct.elf"
    config = elf_config(elf)
    m = re.search(r"\bgit=(\S+)", config)
    # the image's source revision (firmware/CMakeLists.txt: a hash of its sources, "src-..."), never the
    # checkout's: a rerun from any clone or path must write the same run.json
    meta["firmware"] = {
        "git_rev": m.group(1) if m else "unknown",
        "elf_sha256": sha256_file(elf),
        "config": config,
    }
    m = re.search(r"\bopts=(\S+)", config)
    if m:  # every compile-time option with its effective value, as the image records them
        meta["options"] = _typed(dict(kv.split("=", 1) for kv in m.group(1).split(",") if "=" in kv))
    nc, expect = negative_control(meta["options"], spec.shift)
    if nc:
        meta["negative_control"], meta["expect"] = nc, expect
    m = re.search(r"\b(?:rtos_version|RTOS_VERSION)=(\S+)", config)
    meta["rtos_version"] = m.group(1) if m else ""
    m = re.search(r"\bvariant=(\S+)", config)
    if m and m.group(1) not in ("-", spec.variant or "-"):
        raise CaptureError(f"image variant {m.group(1)!r} does not match the requested {spec.variant!r}")
    rc, wall = run_qemu(elf, work, spec.timeout_s, spec.shift)
    uart_path = work / "uart.log"
    uart = uart_path.read_text(errors="replace") if uart_path.exists() else ""
    meta["result_lines"] = [m.group(0).rstrip("\r") for m in RESULT_RE.finditer(uart)]
    meta["qemu"] = {
        "version": qemu_version(),
        "machine": MACHINE,
        "flags": [*qemu_flags(spec.shift), "-kernel", "ct.elf", "-plugin", "vla.so,out=vla.edges"],
        "exit_code": rc,
        "wall_s": round(wall, 3),
    }
    done = DONE_RE.search(uart)
    if not done:
        tail = (work / "qemu.stderr").read_text(errors="replace")[-500:]
        raise CaptureError(
            f"no CT_DONE sentinel on the UART (QEMU exit code {rc}){': ' + tail if tail else ''}"
        )
    if not (work / "vla.edges").exists():
        raise CaptureError("the VLA plugin wrote no edge log")
    log = read_edge_log(work / "vla.edges")
    sites = read_sites(sites_h) if sites_h else read_sites()
    cap = channels_from_log(log, sites, BAUD)
    gpio_edges = sum(len(c.edges_ns) for c in cap.channels if c.name != UART_CHANNEL)
    if gpio_edges == 0:
        raise CaptureError(f"capture has no pin edges ({cap.stores} stores logged)")
    if cap.unreadable_stores:
        raise CaptureError(f"{cap.unreadable_stores} GPIO stores had an unreadable value")

    trace, fmt = _trace_file(work, uart)
    tstats = _trace_stats(uart)
    overflow = bool(tstats.get("dropped")) or bool(re.search(r"^CT_FAIL trace\.overflow\b", uart, re.M))
    m = TS_HZ_RE.search(uart)
    ts_hz = int(m.group(1)) if m else TS_HZ
    if trace is not None:
        name = {"systemview": "trace.SVDat", "ctf": "trace.ctf"}.get(fmt, "trace.trx")
        data = trace.read_bytes()
        if fmt == "systemview" and not data.startswith(b";"):
            data = SV_HEADER.format(title=f"crosstrace {spec.rtos}/{spec.app_dir}").encode() + data
        trace.unlink()
        (work / name).write_bytes(data)
        meta["trace"] = {
            "file": name,
            "format": fmt,
            "sha256": sha256_file(work / name),
            "tick_hz": ts_hz,
            "overflow": overflow,
            **tstats,
        }
        if fmt == "ctf":
            shutil.copyfile(ctf_metadata(), work / "metadata")
            meta["trace"]["metadata"] = {"file": "metadata", "sha256": sha256_file(work / "metadata")}
    else:
        meta["trace"] = None
    logic = []
    for prof in spec.profiles:
        fname = "logic.sr" if prof.name == "ideal" else f"logic-{prof.name}.sr"
        info = write_profile(cap, prof, work / fname)
        logic.append(
            {
                "file": fname,
                "format": "sigrok",
                "sha256": sha256_file(work / fname),
                "profile": prof.as_json(),
                "samples": info["samples"],
                "edges": info["edges"],
            }
        )
    meta["logic"] = logic
    meta["uart"] = {
        "file": "uart.log",
        "sha256": sha256_file(uart_path),
        "baud": BAUD,
        "channel": UART_CHANNEL,
        "brr": cap.uart_brr,
    }
    present = {c.name for c in cap.channels}
    meta["sites"] = [
        {"id": s.id, "name": s.name, "pin": f"PG{s.pin}", "channel": s.name if s.name in present else None}
        for s in sites
    ]
    meta["channels"] = [{"name": c.name, "pin": cap.pins[c.name], "initial": c.initial} for c in cap.channels]
    meta["vla"] = {"stores": cap.stores, "end_ns": cap.end_ns, "edge_log": "not kept (exact copy: logic.sr)"}
    meta["done"] = {"ok": int(done.group(1)), "fail": int(done.group(2))}
    meta["status"] = "ok"
    meta["created_utc"] = _utc()
    for tmp in ("vla.edges", "qemu.stderr", "ct.elf"):
        (work / tmp).unlink(missing_ok=True)
    (work / "run.json").write_text(json.dumps(meta, indent=1) + "\n")
    (work / "README.md").write_text(_campaign.readme(spec, meta))
    if overflow:
        raise CaptureError(f"trace buffer overflowed: {tstats.get('dropped', '?')} trace records were lost")
    if meta["done"]["fail"] or not meta["done"]["ok"]:
        fails = [ln for ln in meta["result_lines"] if ln.startswith("CT_FAIL")]
        raise CaptureError(
            f"the firmware reported a failed run ({done.group(0).strip()}): {'; '.join(fails)}"
        )


# ---- campaign and verification ---------------------------------------------------------------------------


def load_campaign(path: Path = CAMPAIGN) -> list[tuple[RunSpec, str]]:
    """Every (run, run_id) of the campaign file (vla/campaign.py: [[run]] entries, then [[rerun]])."""
    return _campaign.load_campaign(path)


def select_runs(runs: list[tuple[RunSpec, str]], only: list[str]) -> list[tuple[RunSpec, str]]:
    """The runs ``--only`` names: a whole RTOS (``zephyr``), ``<rtos>/<app-dir>`` or
    ``<rtos>/<app-dir>/<run-id>``."""
    keys = set(only)
    return [(s, rid) for s, rid in runs
            if keys & {s.rtos, f"{s.rtos}/{s.app_dir}", f"{s.rtos}/{s.app_dir}/{rid}"}]


def verify(root: Path) -> list[str]:
    """Every run.json under ``root``: each listed file exists and its sha256 matches. Returns problems."""
    problems = []
    for rj in sorted(root.rglob("run.json")):
        d = rj.parent
        try:
            meta = json.loads(rj.read_text())
        except ValueError as e:
            problems.append(f"{rj}: not JSON ({e})")
            continue
        entries = [meta.get("trace"), meta.get("uart"), *(meta.get("logic") or [])]
        for ent in filter(None, entries):
            f = d / ent["file"]
            if not f.exists():
                problems.append(f"{f}: listed in run.json but missing")
            elif sha256_file(f) != ent["sha256"]:
                problems.append(f"{f}: sha256 differs from run.json")
    return problems


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="one capture")
    r.add_argument("--rtos", required=True)
    r.add_argument("--app", required=True)
    r.add_argument("--opts", default="", help="compile-time options 'K=V ..' or '-DK=V ..' (make fw OPTS=)")
    r.add_argument("--variant", default="", help="folder suffix <app>-<variant> (e.g. n5)")
    r.add_argument("--la", default=",".join(DEFAULT_LA), help=f"profiles: {', '.join(PROFILES)} or custom")
    r.add_argument("--shift", type=int, default=0, choices=range(0, 11), metavar="S",
                   help="QEMU -icount shift: 2**S ns per instruction (0: 1 ns; 3: 8 ns, board speed)")
    r.add_argument("--elf", type=Path, help="use this image instead of building one")
    r.add_argument("--out", type=lambda p: Path(p).resolve(), default=ROOT / "captures")
    r.add_argument("--run-id", default=None, help="default: UTC time of the run, e.g. 20260101T120000Z")
    r.add_argument("--timeout", type=float, default=300.0, help="wall-clock limit for the QEMU run (s)")
    c = sub.add_parser("campaign", help="the reference matrix of captures/campaign.toml")
    c.add_argument("--only", action="append", default=[],
                   help="<rtos> or <rtos>/<app-dir>[/<run-id>] (repeatable)")
    c.add_argument("--out", type=lambda p: Path(p).resolve(), default=ROOT / "captures")
    c.add_argument("--list", action="store_true")
    c.add_argument("--campaign", type=Path, default=CAMPAIGN,
                   help="campaign file (default captures/campaign.toml)")
    v = sub.add_parser("verify", help="check run.json hashes under a folder")
    v.add_argument("root", type=Path, nargs="?", default=ROOT / "captures")
    return ap


def spec_from_args(a: argparse.Namespace) -> RunSpec:
    """The run a ``capture.py run`` command line asks for (ValueError on a malformed --opts/--la)."""
    return RunSpec(
        a.rtos, a.app, parse_opts(a.opts), a.variant,
        tuple(parse_profile(p) for p in a.la.split(",") if p), a.timeout, a.shift,
    )


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    a = ap.parse_args(argv)

    if a.cmd == "verify":
        probs = verify(a.root)
        print("\n".join(probs) or f"{a.root}: all run.json hashes match")
        return 1 if probs else 0
    if a.cmd == "run":
        try:
            spec = spec_from_args(a)
        except (ValueError, KeyError) as e:
            ap.error(str(e))
        run_id = a.run_id or _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        try:
            d = capture(spec, a.out, run_id, a.elf.resolve() if a.elf else None)
        except CaptureError as e:
            print(f"capture FAILED: {e}", file=sys.stderr)
            return 1
        print(d)
        return 0
    runs = load_campaign(a.campaign)
    if a.only:
        runs = select_runs(runs, a.only)
    failed = 0
    for spec, rid in runs:
        if a.list:
            print(f"{spec.rtos}/{spec.app_dir}/{rid}  {spec.options}  {[p.name for p in spec.profiles]}"
                  f"  shift={spec.shift}")
            continue
        try:
            t0 = time.perf_counter()
            d = capture(spec, a.out, rid)
            print(
                f"ok      {d.relative_to(a.out) if d.is_relative_to(a.out) else d}  "
                f"({time.perf_counter() - t0:.1f} s)"
            )
        except CaptureError as e:
            failed += 1
            print(f"FAILED  {e}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
