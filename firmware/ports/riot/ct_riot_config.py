#!/usr/bin/env python3
"""The configuration of one RIOT image (standard library only; called by ports/riot/Makefile).

Reads the app's defaults from ``apps/<app>/options.cmake``, applies ``-D<name>=<value>`` options, computes
the source revision (``src-<sha256 prefix>`` of the image's own sources, as firmware/CMakeLists.txt) and
writes ``<out>/ct_config.mk`` (CT_DEFS, CT_CONFIG_STRING) and ``<out>/build.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

# folders (relative to firmware/) whose files make up a RIOT image, READMEs and riot.mk excepted; the
# SystemView/RTT configuration headers are shared with the FreeRTOS port
IMAGE_PATHS = ("ports/riot", "include", "common", "boards/common",
               "ports/freertos/sysview/SEGGER_SYSVIEW_Conf.h", "ports/freertos/sysview/SEGGER_RTT_Conf.h",
               "ports/freertos/sysview/Global.h")
PORT_OPTIONS = ("CT_SV_BUFFER_SIZE",)
NEGCTL = ("CT_NEGCTL_DELAY_SITE", "CT_NEGCTL_DELAY_INSNS", "CT_NEGCTL_DROP_SITE", "CT_NEGCTL_DROP_EVERY")


def app_defaults(fw: Path, app: str) -> list[tuple[str, str]]:
    path = fw / "apps" / app / "options.cmake"
    if not path.is_file():
        avail = sorted(p.name for p in (fw / "apps").iterdir() if (p / "options.cmake").is_file())
        sys.exit(f"Invalid value for APP: '{app}'. Allowed values are: {', '.join(avail)}")
    m = re.search(r"set\(CT_APP_OPTIONS((?:\s+\"[^\"]*\")*)\s*\)", path.read_text())
    return [tuple(kv.split("=", 1)) for kv in re.findall(r"\"([^\"]*)\"", m.group(1))] if m else []


def revision(fw: Path, app: str, board: str, version: str) -> str:
    files: list[str] = []
    for p in (*IMAGE_PATHS, f"apps/{app}", f"boards/{board}"):
        q = fw / p
        found = [q] if q.is_file() else [f for f in q.rglob("*") if f.is_file()]
        files += [f.relative_to(fw).as_posix() for f in found]
    keep = sorted(f for f in set(files) if not re.search(r"(^|/)README\.md$|__pycache__|\.pyc$|riot\.mk$", f))
    digest = f"riot {version}\n" + "".join(
        f"{f} {hashlib.sha256((fw / f).read_bytes()).hexdigest()}\n" for f in keep)
    return "src-" + hashlib.sha256(digest.encode()).hexdigest()[:12]


def main() -> None:
    ap = argparse.ArgumentParser()
    for name in ("fw", "board", "app", "version", "out"):
        ap.add_argument(f"--{name}", required=True)
    ap.add_argument("--variant", default="")
    ap.add_argument("--opts", default="")
    a = ap.parse_args()
    fw, out = Path(a.fw), Path(a.out)
    given = dict(re.findall(r"-D(\w+)=(\S*)", a.opts))
    trace = given.get("CT_TRACE", "1")
    opts = [("CT_TRACE", trace)] + [(k, given.get(k, v)) for k, v in app_defaults(fw, a.app)]
    if trace != "0":
        opts.append(("CT_SV_BUFFER_SIZE", given.get("CT_SV_BUFFER_SIZE", "16384")))
    opts += [(k, given[k]) for k in NEGCTL if given.get(k, "0") != "0"]
    unknown = set(given) - {k for k, _ in opts} - set(NEGCTL)
    if unknown:
        sys.exit(f"unknown option(s) for APP={a.app} on RIOT: {', '.join(sorted(unknown))}")
    rev = revision(fw, a.app, a.board, a.version)
    opts_str = ",".join(f"{k}={v}" for k, v in opts)
    config = (f"rtos=riot rtos_version={a.version} board={a.board} app={a.app} variant={a.variant or '-'} "
              f"trace={trace} git={rev} opts={opts_str}")
    out.mkdir(parents=True, exist_ok=True)
    defs = " ".join(f"-D{k}={v}" for k, v in opts)
    mk = f"CT_DEFS := {defs}\nCT_TRACE_VALUE := {trace}\nCT_CONFIG_STRING := {config}\n"
    if not (out / "ct_config.mk").is_file() or (out / "ct_config.mk").read_text() != mk:
        (out / "ct_config.mk").write_text(mk)  # rewritten only on change: the objects depend on it
    opts_json = {k: int(v) if re.fullmatch(r"-?\d+", v) else v for k, v in opts}
    build = {"schema": 1, "board": a.board, "rtos": "riot", "rtos_version": a.version, "app": a.app,
             "variant": a.variant, "options": opts_json, "git_rev": rev, "config": config, "elf": "ct.elf"}
    (out / "build.json").write_text(json.dumps(build) + "\n")


if __name__ == "__main__":
    main()
