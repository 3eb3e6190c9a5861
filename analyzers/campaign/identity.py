"""What makes a capture's result reusable: input file hashes, the code hash, the capture's identity."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ..options import AnalysisOptions

#: Bumped when the outputs change shape; part of the cache key together with the code hash.
RESULT_VERSION = 1


_SHA_MEMO: dict[tuple[str, int, int], str] = {}


def _sha256(path: Path) -> str:
    """SHA-256 of a file, remembered per (path, size, mtime) within a process."""
    st = Path(path).stat()
    key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)
    if key not in _SHA_MEMO:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _SHA_MEMO[key] = h.hexdigest()
    return _SHA_MEMO[key]


_CODE_HASH: str | None = None


def code_hash() -> str:
    """Hash of the analyzers' and readers' Python sources: a code change invalidates the cache."""
    global _CODE_HASH
    if _CODE_HASH is None:
        h = hashlib.sha256(str(RESULT_VERSION).encode())
        base = Path(__file__).resolve().parents[2]
        for pkg in ("analyzers", "trace_parsers"):
            for p in sorted((base / pkg).rglob("*.py")):
                h.update(p.relative_to(base).as_posix().encode())
                h.update(p.read_bytes())
        _CODE_HASH = h.hexdigest()[:16]
    return _CODE_HASH

def input_hash(folder: Path, plan: dict[str, Any], options: AnalysisOptions) -> str:
    """The cache key of a capture: the code, every input file, and every option that can change a
    result (``options``, an :class:`~analyzers.options.AnalysisOptions`: its digest)."""
    h = hashlib.sha256(code_hash().encode())
    h.update(f"options={options.digest()}".encode())
    from ..user_config import CONFIG_NAME

    cfg_dir = folder.parent if folder.is_file() else folder
    files = (
        [folder / "run.json", cfg_dir / CONFIG_NAME]
        + (list(plan.get("trace_files") or [plan["trace"]]) if plan["trace"] else [])
        + [e["file"] for e in plan["logic"]]
        + ([plan["uart"]] if plan["uart"] else [])
    )
    for f in files:
        f = Path(f)
        if f.is_file():
            h.update(f.name.encode())
            h.update(_sha256(f).encode())
    if plan.get("trace_tick_hz_assumed"):  # analyze --tick-hz: an option that changes the result
        h.update(f"tick_hz={plan['trace_tick_hz_assumed']}".encode())
    return h.hexdigest()


def _identity(folder: Path, capture_id: str, run: dict[str, Any]) -> dict[str, Any]:
    parts = capture_id.split("/")
    # a recording without run.json: its name stands for the app (the RTOS comes from the trace)
    app = run.get("app") or ("" if run else parts[-1])
    app_dir = parts[-2] if len(parts) >= 2 else ""
    variant = str(run.get("variant") or "")
    if not variant and app and app_dir.startswith(app + "-"):
        variant = app_dir[len(app) + 1 :]
    return {
        "capture": capture_id,
        "board": run.get("board", ""),
        "rtos": run.get("rtos", ""),
        "app": app,
        "variant": variant,
        "run_id": run.get("run_id") or (parts[-1] if parts else ""),
    }


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, Path):
        return str(o)
    return str(o)
