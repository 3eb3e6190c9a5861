"""Find capture folders and the recordings in them (``crosstrace analyze`` step 1)."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence
from pathlib import Path

_TRACE_FORMATS = ("systemview", "tracex")
_SKIP_NAMES = {"run.json", "README.md", "uart.log", "build.json", "index.toml"}
#: never a recording: not sniffed (sniffing loads every reader, which a parent process need not do)
_SKIP_SUFFIXES = (".md", ".toml", ".json", ".yaml", ".yml", ".html", ".py", ".ipynb", ".pdf", ".png")


def _skipped(name: str) -> bool:
    return name in _SKIP_NAMES or name.startswith(".") or name.lower().endswith(_SKIP_SUFFIXES)


def _sniff(path: Path) -> str | None:
    """Format name of ``path`` or None (own event files by suffix, everything else by content)."""
    from .._io import SUFFIX

    if path.name.endswith(SUFFIX):
        return "ctev"
    from trace_parsers import detect_format
    from trace_parsers.errors import TraceError

    try:
        return detect_format(path)
    except TraceError:
        return None


#: ESP32 per-core file names (OpenOCD ``file://pro-cpu file://app-cpu``): token -> (core, partner)
CORE_TOKENS = {
    "procpu": (0, "appcpu"),
    "appcpu": (1, "procpu"),
    "cpu0": (0, "cpu1"),
    "cpu1": (1, "cpu0"),
    "core0": (0, "core1"),
    "core1": (1, "core0"),
}
_CORE_RE = re.compile(r"^(?P<pre>.*?)(?P<tok>procpu|appcpu|cpu0|cpu1|core0|core1)(?P<post>\.[^.]*)$", re.I)


def core_partner(path: Path) -> tuple[int, Path] | None:
    """``(core of path, the other core's file)`` when ``path`` is named as one half of an ESP32
    per-core pair (``…_procpu.SVDat``/``…_appcpu.SVDat``, ``cpu0``/``cpu1``, ``core0``/``core1``)
    and the other half exists beside it; else None.

    >>> core_partner(Path("/nonexistent/x_procpu.SVDat")) is None
    True
    """
    m = _CORE_RE.match(path.name)
    if m is None:
        return None
    core, other = CORE_TOKENS[m["tok"].lower()]
    want = (m["pre"] + other + m["post"]).lower()
    try:
        siblings = sorted(path.parent.iterdir())
    except OSError:
        return None
    for f in siblings:
        if f.name.lower() == want and f.is_file():
            return core, f
    return None


def pair_stem(files: Sequence[Path]) -> str:
    """Name of a recording (group) for its capture id: the file name without its suffix, and for
    a per-core pair without the core token (``x_procpu.SVDat`` + ``x_appcpu.SVDat`` -> ``x``)."""
    name = files[0].name
    if len(files) > 1:
        m = _CORE_RE.match(name)
        if m is not None:
            return m["pre"].rstrip("_-.") or name.split(".")[0]
    return name.split(".")[0]


@dataclasses.dataclass
class FolderContents:
    """The recordings of one folder without run.json, as :func:`folder_contents` sorts them."""

    traces: list[list[Path]]  #: trace recordings; an ESP32 per-core pair is one entry [core0, core1]
    logic: list[Path]  #: logic captures
    skipped: list[tuple[Path, str]]  #: files that are no recording, with the reason


def folder_contents(folder: Path) -> FolderContents:
    """Sort a folder's files into trace recordings (per-core pairs grouped), logic captures and
    files no reader recognises. Names in :data:`_SKIP_NAMES`/``_SKIP_SUFFIXES`` are not looked at."""
    traces: list[list[Path]] = []
    logic: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    paired: set[Path] = set()
    for f in sorted(Path(folder).iterdir()):
        if not f.is_file() or _skipped(f.name) or f in paired:
            continue
        if f.stat().st_size == 0:
            skipped.append((f, "empty file"))
            continue
        fmt = _sniff(f)
        if fmt is None:
            skipped.append((f, "no reader recognises its content"))
        elif fmt in _TRACE_FORMATS or (fmt == "ctev" and f.name.startswith("trace")):
            cp = core_partner(f) if fmt == "systemview" else None
            if cp is not None:
                core, other = cp
                paired.add(other)
                traces.append([f, other] if core == 0 else [other, f])
            else:
                traces.append([f])
        else:
            logic.append(f)
    return FolderContents(traces, logic, skipped)


@dataclasses.dataclass
class Discovery:
    """What :func:`discover_all` found: captures, and everything it looked at and did not use."""

    captures: list[tuple[str, Path]]
    skipped: list[dict[str, str]]  #: {"path", "reason"}: folders and files that are no capture


def discover_all(roots: Sequence[Path], exclude: Sequence[Path] = ()) -> Discovery:
    """Capture folders and recordings under ``roots``, and what was skipped (nothing silently).

    - a folder with ``run.json`` is one capture (its subfolders are not searched);
    - a folder without one holding one trace recording (an ESP32 per-core pair counts as one) is
      one capture: the trace with the folder's logic captures;
    - a folder holding several trace recordings gives one capture per recording (id
      ``<folder>/<recording name>``, the capture "folder" being the recording's file) and one per
      logic capture;
    - an empty folder, a folder with files but no recording, and every file no reader recognises
      are listed in ``skipped`` with the reason.
    """
    found: dict[str, Path] = {}
    skipped: list[dict[str, str]] = []
    excl = [p.resolve() for p in exclude]
    # ids are paths relative to the roots' common ancestor, so folders from several roots never collide
    base = Path(os.path.commonpath([Path(r).resolve() for r in roots])) if roots else Path(".")
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            raise FileNotFoundError(f"{root}: not a directory")
        for dirpath, dirnames, filenames in os.walk(root):
            d = Path(dirpath)
            if any(d.resolve() == e or e in d.resolve().parents for e in excl):
                dirnames[:] = []
                continue
            dirnames[:] = sorted(n for n in dirnames if not n.startswith("."))  # temp/hidden folders
            rel = d.resolve().relative_to(base).as_posix()
            cid = rel if rel != "." else d.resolve().name
            if "run.json" in filenames:
                found[cid] = d
                dirnames[:] = []
                continue
            _discover_folder(d, cid, bool(dirnames), filenames, found, skipped)
    return Discovery(sorted(found.items()), skipped)


def _discover_folder(
    d: Path,
    cid: str,
    has_subfolders: bool,
    filenames: list[str],
    found: dict[str, Path],
    skipped: list[dict[str, str]],
) -> None:
    """One folder without run.json: its captures into ``found``, what is no capture into ``skipped``."""
    c = folder_contents(d)
    skipped += [{"path": str(f), "reason": why} for f, why in c.skipped]
    if len(c.traces) > 1:
        stems = [pair_stem(group) for group in c.traces]
        for group, stem in zip(c.traces, stems):
            # two recordings with one name in different formats: the file names tell them apart
            own = stem if stems.count(stem) == 1 else group[0].name
            found[f"{cid}/{own}"] = group[0]
        for f in c.logic:  # a logic capture named after a recording belongs to that recording
            own = f.name.split(".")[0]
            if not any(own == st or own.startswith(st + "-") for st in stems):
                found[f"{cid}/{own}"] = f
    elif c.traces or c.logic:
        found[cid] = d
    elif not has_subfolders:
        reason = "empty folder" if not filenames else "no recording in this folder"
        skipped.append({"path": str(d), "reason": reason})


def discover(roots: Sequence[Path], exclude: Sequence[Path] = ()) -> list[tuple[str, Path]]:
    """Captures under ``roots`` as ``(capture_id, folder or recording)``, sorted by id (see
    :func:`discover_all`, which also says what was skipped)."""
    return discover_all(roots, exclude).captures
