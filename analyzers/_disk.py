"""A full disk said as one: a long recording's chunked analysis keeps scratch files (spilled
tables, analyzer state, site occurrences: ~80 B per event) in the output folder until the
recording is done, and a full disk there is the user's to fix, not a crosstrace bug."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

from trace_parsers.errors import AnalysisError

__all__ = ["FULL", "no_space", "free_bytes"]

#: errno values of a full disk or an exhausted quota
FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


def _full(e: BaseException | None) -> OSError | None:
    """The OSError of a full disk in ``e`` or its causes, or None."""
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in FULL:
            return e
        e = e.__cause__ or e.__context__
    return None


def free_bytes(folder: Path) -> int | None:
    """Free bytes on the disk holding ``folder`` (its nearest existing parent), or None."""
    p = Path(folder).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return None


def no_space(e: BaseException, folder: Path, doing: str) -> AnalysisError | None:
    """``AN_NO_SPACE`` naming ``folder``, its free space and the fix when ``e`` (or a cause) is a
    full disk or quota; None for any other error.

    >>> import errno
    >>> no_space(ValueError("x"), Path("."), "writing") is None
    True
    >>> err = no_space(OSError(errno.ENOSPC, "No space left on device"), Path("out"), "writing")
    >>> err.code, str(err).startswith("no space left on the disk holding out")
    ('AN_NO_SPACE', True)
    """
    full = _full(e)
    if full is None:
        return None
    free = free_bytes(folder)
    now = f"{free / 1e9:.2f} GB free now" if free is not None else "free space unknown"
    where = f" ({full.filename})" if full.filename else ""
    return AnalysisError(
        f"no space left on the disk holding {folder} while {doing}{where}; {now}. A long "
        "recording analyzed in chunks keeps ~80 B of scratch per event there until it is done "
        "(a 1 GB SystemView stream: ~18 GB, removed afterwards). Free space there or write the "
        "results to a larger disk (-o/--output)", code="AN_NO_SPACE")
