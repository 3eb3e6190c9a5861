"""`crosstrace analyze DIR...`: every capture folder → metrics, cross-validation, campaign tables.

A capture folder holds one run (``run.json`` with the trace, logic captures and UART log it lists;
or, without run.json, any files whose content a reader recognises). Folders are analyzed in
parallel — a process pool by default, a Dask cluster with ``--scheduler tcp://host:port`` (or
``--scheduler dask-local``) — and results are cached by input hash, so a rerun skips unchanged
captures. A capture that fails is reported and the rest complete.

Parallel runs execute a task graph, not one task per capture: a capture too big to balance whole
(at least half of one worker's share of the input bytes) gets one *decode* task per recording,
which writes its ``events-<source>.ctev.parquet`` stamped with the recording's SHA-256, the code
hash and the reader options, and an *analysis* task that starts when they are done and loads
them. The ready task on the longest remaining chain (estimated from input bytes) runs first, and
no more tasks are in flight than workers, so a big capture's decodes start at once and its
analysis as soon as its last decode ends. Workers start in the background (the fork server loads
numpy, pyarrow, pandas and the readers once) and write the campaign tables at the end.

Outputs under ``-o OUT``:

- ``captures/<capture-id>/``: ``events-<source>.ctev.parquet`` (decoded events; none for a
  recording analyzed in chunks, :mod:`.chunked`), ``instances.parquet`` (every metric instance),
  ``metrics.parquet`` (statistics per metric and source), ``crossval.parquet``,
  ``alignment.parquet``, ``pairs.parquet``, ``drop_log.parquet``,
  ``result.json`` (all of it as JSON, the input hash and provenance);
- ``campaign.parquet``/``.csv``: one row per capture, board, RTOS, app, metric, source and
  ``core`` (-1: the whole recording; a multi-core recording's kernel metrics and CPU load also
  get one row per core);
- ``crossval.parquet``/``.csv``: the trace-versus-capture agreement of every capture and metric;
- ``comparison.parquet``/``.csv``: per board, app and metric, each RTOS as a multiple of the
  fastest and of the slowest, in µs and CPU cycles;
- ``overhead.csv``: traced versus untraced builds of the same test, where both exist;
- ``manifest.json``: captures, status, errors, provenance; after a parallel run also ``schedule``:
  every task with its priority and, for the process pool, when and in which worker it ran.

The package, one job per module (imports point down the list):

- :mod:`.discover`: capture folders and their recordings;
- :mod:`.plan`: what one folder holds (:func:`~.plan.plan_capture`);
- :mod:`.identity`: input, code and option hashes, the capture's identity;
- :mod:`.tables`: the campaign tables (a capture's rows, :func:`~.tables.load_campaign`);
- :mod:`.chunked`: a large SystemView / sigrok recording analyzed in chunks (``--chunk-events``);
- :mod:`.instances`: ``instances.parquet`` written source by source, in row groups;
- :mod:`.capture`: decode the sources, run the analyzers and cross-validation of one capture;
- :mod:`.scheduler`: task graph, process pool, Dask (:func:`~.scheduler.analyze_dirs`);
- :mod:`.cli_analyze`: the ``analyze`` command's arguments and exit codes.
"""

from importlib import import_module
from typing import Any

#: the public API of the batch analysis, name -> module (loaded on first use: ``crosstrace info``
#: and the readers never pay for the campaign's imports)
_PUBLIC = {
    "analyze_dirs": "scheduler",
    "analyze_capture": "capture",
    "cached_result": "capture",
    "decode_source": "capture",
    "discover_all": "discover",  # (``discover`` itself is also the module's name: import it from there)
    "plan_capture": "plan",
    "load_campaign": "tables",
    "write_campaign": "tables",
    "iter_instances": "tables",
    "comparison_table": "tables",
    "overhead_table": "tables",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'analyzers.campaign' has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_PUBLIC[name]}"), name)
