"""Cross-validation: every metric measured from the trace and from the pins, judged on the raw
difference (docs/methodology.md, "Cross-validation").

- :mod:`.align` — one clock offset and one drift shared by every site (nothing per site);
- :mod:`.calibration` — per-site constants from an independent source, with provenance;
- :mod:`.verdict` — raw and calibrated differences, PASS / FAIL / INCOMPLETE / UNRESOLVED;
- :mod:`.completeness` — unpaired occurrences, sites seen on one side, declared edge counts;
- :mod:`.kernel_timing` — the RTOS's own events against the pins;
- :mod:`.validate` — :func:`cross_validate`, which runs them all on one trace and one capture.
"""

from .align import Alignment, SiteFit, align
from .calibration import Calibration
from .validate import MAX_PLAUSIBLE_PPM, CrossValidation, cross_validate
from .verdict import (
    INSTANCE_QUANTILE,
    NOT_RATIO_SUFFIXES,
    TOLERANCE,
    Agreement,
    _match_pairs,
    combine,
    compare_counts,
    compare_metrics,
    judge,
    unpaired_limit,
)

__all__ = [
    "INSTANCE_QUANTILE",
    "MAX_PLAUSIBLE_PPM",
    "NOT_RATIO_SUFFIXES",
    "TOLERANCE",
    "Agreement",
    "Alignment",
    "Calibration",
    "CrossValidation",
    "SiteFit",
    "_match_pairs",
    "align",
    "combine",
    "compare_counts",
    "compare_metrics",
    "cross_validate",
    "judge",
    "unpaired_limit",
]
