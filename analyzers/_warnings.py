"""Reader warnings on the command line: one plain line each.

Under ``--on-corrupt warn`` a reader skips damaged input and emits a ``CorruptInputWarning``;
Python's default display (``file.py:166: CorruptInputWarning: …`` plus the source line that
called ``warnings.warn``) means nothing to a user. :func:`plain_warnings` shows it as
``crosstrace: warning: <message>`` instead (the message names the file and the byte offset).
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

_installed = False


def plain_warnings() -> None:
    """Show reader warnings as one line on stderr (idempotent; other warnings unchanged)."""
    global _installed
    if _installed:
        return
    from trace_parsers.errors import CorruptInputWarning

    default = warnings.showwarning

    def show(message: Any, category: type[Warning], filename: str, lineno: int, file: Any = None,
             line: str | None = None) -> None:
        if issubclass(category, CorruptInputWarning):
            print(f"crosstrace: warning: {message}", file=file or sys.stderr)
        else:
            default(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    _installed = True
