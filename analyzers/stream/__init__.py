"""Chunked processing of long recordings: memory of the event reading bounded by the chunk size.

- :mod:`.events` — ``crosstrace events``: chunks into Parquet row groups / CSV appends;
- :mod:`.run` — every analyzer over chunks (``analyze_chunks``, ``run_analyzers_chunked``), with
  results equal to the in-memory analyzers; the state carried across chunk borders is in
  :mod:`.align`, :mod:`.sites`, :mod:`.cpu`, :mod:`.tasks`, :mod:`.isr`, :mod:`.kernel`,
  :mod:`.sched`, :mod:`.ctxswitch`, :mod:`.isrlat`, :mod:`.workload`, :mod:`.user`;
- :mod:`.metrics` — the one place that imports the in-memory metric modules this package wraps.
"""

#: recordings at least this large (bytes) without a chunk reader get a "memory not bounded" note
AUTO_CHUNK_BYTES = 256 << 20
#: events per chunk of ``crosstrace events`` (measured: ~230 MB + ~230 B per chunk event peak)
EVENTS_CHUNK = 1 << 20
