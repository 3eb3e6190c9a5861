"""The one options object of an analysis: every option that can change a result, validated once.

:class:`AnalysisOptions` is what ``crosstrace analyze`` builds from its arguments and what reaches
every capture's analysis. Its :meth:`~AnalysisOptions.digest` is part of each capture's cache key
(``campaign.identity.input_hash``), and :meth:`~AnalysisOptions.as_dict` is written into
``manifest.json`` and every ``result.json``: a result is reused only when it was made with the same
options, and every result says which options made it.

>>> o = AnalysisOptions(tolerance=0.01)
>>> o.tolerance, o.on_corrupt
(0.01, 'recover')
>>> o.digest() == AnalysisOptions(tolerance=0.01).digest() != AnalysisOptions().digest()
True
>>> AnalysisOptions(on_corrupt="ignore")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
trace_parsers.errors.AnalysisError: on_corrupt must be one of raise, recover, warn, skip, got 'ignore' ...
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

from trace_parsers.errors import ON_CORRUPT, AnalysisError

#: the default agreement tolerance of trace against pins (2 %): the only place it is written
DEFAULT_TOLERANCE = 0.02


@dataclass(frozen=True)
class AnalysisOptions:
    """Every option of ``crosstrace analyze`` that can change a result.

    - ``tolerance``: agreement tolerance of trace against pins (fraction, 0.02 = 2 %);
    - ``on_corrupt``: reader policy for damaged input (:data:`ON_CORRUPT`, the readers' own list;
      ``recover``: a truncated final record is a diagnostic and everything before it is analyzed;
      ``raise``: any damage fails the capture);
    - ``tick_hz``: trace tick rate for recordings that state none (TraceX) when run.json does not;
    - ``chunk_events``: read recordings in chunks of this many events (None: large ones only).
    """

    tolerance: float = DEFAULT_TOLERANCE
    on_corrupt: str = "recover"
    tick_hz: int | None = None
    chunk_events: int | None = None

    def __post_init__(self) -> None:
        tol = self.tolerance
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) or tol <= 0:
            raise AnalysisError(f"tolerance must be a positive number, got {tol!r}", code="AN_BAD_OPTION")
        object.__setattr__(self, "tolerance", float(tol))
        if self.on_corrupt not in ON_CORRUPT:
            raise AnalysisError(f"on_corrupt must be one of {', '.join(ON_CORRUPT)}, got {self.on_corrupt!r}",
                                code="AN_BAD_OPTION")
        for name in ("tick_hz", "chunk_events"):
            v = getattr(self, name)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise AnalysisError(f"{name} must be a whole number of at least 1, got {v!r}",
                                    code="AN_BAD_OPTION")

    @classmethod
    def of(cls, options: AnalysisOptions | None = None, **fields: Any) -> AnalysisOptions:
        """``options`` with ``fields`` replaced (fields given as None keep their value)."""
        base = options if options is not None else cls()
        given = {k: v for k, v in fields.items() if v is not None}
        return dataclasses.replace(base, **given) if given else base

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def digest(self) -> str:
        """A short hash of every field: part of the cache key."""
        text = json.dumps(self.as_dict(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]
