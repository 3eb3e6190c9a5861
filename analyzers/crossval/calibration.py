"""Per-site calibration: constants that come from an independent source, with their provenance.

A site's *calibration* ``c`` is how much later (ns) its trace timestamp is taken than its pin
changes, beyond what every other site has in common. A trace interval ``A -> B`` is then too long
by ``c_B - c_A`` and is corrected by ``c_A - c_B``. These constants are **inputs**: they are
never fitted from the capture being judged (a fit would absorb exactly the constant bias that
cross-validation exists to catch).

Sources, in order of precedence:

1. ``run.json`` ``"calibration": {"source": "<where the numbers come from>", "sites": {"<site>": ns}}``
   — for instance measured with ``crosstrace calibrate`` on a calibration capture of the same
   firmware build on the same board, or a value the firmware's authors state.
2. ``crosstrace.toml`` beside the recordings, table ``[calibration]`` with the same keys.
3. None: every constant is 0 (the default; crosstrace's own sites share one code path, so their
   constants are equal and cancel in every interval).

>>> cal = Calibration.from_run({"calibration": {"source": "calib run 2026-11-20", "sites": {"b": 3}}})
>>> cal.interval_ns("a", "b"), cal.source
(-3.0, 'declared: calib run 2026-11-20')
>>> Calibration.none().interval_ns("a", "b"), Calibration.none().source
(0.0, 'none')
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trace_parsers.errors import AnalysisError


@dataclass(frozen=True)
class Calibration:
    """Per-site constants (ns) and where they come from."""

    sites: Mapping[str, float] = field(default_factory=dict)
    source: str = "none"

    @classmethod
    def none(cls) -> Calibration:
        return cls({}, "none")

    @classmethod
    def from_mapping(cls, block: Any, where: str) -> Calibration:
        """Validate a ``calibration`` block (``{"source": str, "sites": {site: ns}}``)."""
        if not isinstance(block, Mapping):
            raise AnalysisError(f"{where}: 'calibration' must be a table with 'source' and 'sites'")
        sites = block.get("sites", {})
        if not isinstance(sites, Mapping):
            raise AnalysisError(f"{where}: calibration 'sites' must map site names to nanoseconds")
        out: dict[str, float] = {}
        for name, v in sites.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
                raise AnalysisError(f"{where}: calibration of site {name!r} must be finite ns: {v!r}")
            out[str(name)] = float(v)
        src = str(block.get("source") or "").strip()
        if out and not src:
            raise AnalysisError(f"{where}: calibration needs a 'source' saying where its numbers come from")
        return cls(out, f"declared: {src}" if out else "none")

    @classmethod
    def from_run(cls, run: Mapping[str, Any] | None, folder: Path | None = None) -> Calibration:
        """The calibration declared for a capture: run.json first, then ``crosstrace.toml``."""
        if run and run.get("calibration") is not None:
            return cls.from_mapping(run["calibration"], f"{folder / 'run.json' if folder else 'run.json'}")
        if folder is not None and (folder / "crosstrace.toml").is_file():
            import tomllib

            path = folder / "crosstrace.toml"
            try:
                doc = tomllib.loads(path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
                raise AnalysisError(f"{path}: not valid TOML: {e}") from None
            if "calibration" in doc:
                return cls.from_mapping(doc["calibration"], str(path))
        return cls.none()

    def site_ns(self, site: str) -> float:
        return float(self.sites.get(site, 0.0))

    def interval_ns(self, start_site: str, end_site: str) -> float:
        """Correction added to a trace interval ``start_site -> end_site``: ``c_start - c_end``."""
        return self.site_ns(start_site) - self.site_ns(end_site)

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "sites": dict(self.sites)}
