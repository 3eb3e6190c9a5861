"""Compatibility shim: ``analyzers.batch`` moved to the package :mod:`analyzers.campaign`.

Every name it had is re-exported here so existing imports keep working; new code imports from
the package's modules (discover, plan, identity, capture, tables, scheduler, cli_analyze).
"""

from __future__ import annotations

from .campaign.capture import (
    _analyze,
    _decoded,
    _open,
    _source_stamp,
    _stat_rows,
    _write_table,
    analyze_capture,
    cached_result,
    decode_source,
)
from .campaign.cli_analyze import cmd_analyze, setup_cli
from .campaign.discover import _SKIP_NAMES, _SKIP_SUFFIXES, _TRACE_FORMATS, _skipped, _sniff, discover
from .campaign.identity import RESULT_VERSION, _identity, _json_default, _sha256, code_hash, input_hash
from .campaign.plan import BOARD_CPU_HZ, capture_sources, plan_capture
from .campaign.scheduler import (
    _ANALYZE_WEIGHT,
    _PRELOAD,
    _SPLIT_SHARE,
    _after,
    _plan_tasks,
    _ProcessPool,
    _run_graph,
    _run_pool,
    _single_threaded,
    _Timed,
    _timed,
    _tune_malloc,
    analyze_dirs,
)
from .campaign.tables import comparison_table, iter_instances, load_campaign, overhead_table, write_campaign

__all__ = [
    "BOARD_CPU_HZ",
    "RESULT_VERSION",
    "_ANALYZE_WEIGHT",
    "_PRELOAD",
    "_SKIP_NAMES",
    "_SKIP_SUFFIXES",
    "_SPLIT_SHARE",
    "_TRACE_FORMATS",
    "_ProcessPool",
    "_Timed",
    "_after",
    "_analyze",
    "_decoded",
    "_identity",
    "_json_default",
    "_open",
    "_plan_tasks",
    "_run_graph",
    "_run_pool",
    "_sha256",
    "_single_threaded",
    "_skipped",
    "_sniff",
    "_source_stamp",
    "_stat_rows",
    "_timed",
    "_tune_malloc",
    "_write_table",
    "analyze_capture",
    "analyze_dirs",
    "cached_result",
    "capture_sources",
    "cmd_analyze",
    "code_hash",
    "comparison_table",
    "decode_source",
    "discover",
    "input_hash",
    "iter_instances",
    "load_campaign",
    "overhead_table",
    "plan_capture",
    "setup_cli",
    "write_campaign",
]
