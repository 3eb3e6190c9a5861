"""Chunked processing of long recordings: memory of the event reading bounded by the chunk size.

- :mod:`.events` — ``crosstrace events``: chunks into Parquet row groups / CSV appends;
- the analyzers as reducers fed chunk by chunk (driven by ``analyzers.run``, the one analysis
  engine: a whole recording is one chunk); the state carried across chunk borders is in
  :mod:`.align`, :mod:`.sites`, :mod:`.cpu`, :mod:`.tasks`, :mod:`.isr`, :mod:`.kernel`,
  :mod:`.sched`, :mod:`.ctxswitch`, :mod:`.isrlat`, :mod:`.workload`, :mod:`.user`;
- :mod:`.memory` — freed memory given back to the system between chunks and steps;
- :mod:`.metrics` — the one place that imports the in-memory metric modules this package wraps.
"""

#: recordings at least this large (bytes) without a chunk reader get a "memory not bounded" note
AUTO_CHUNK_BYTES = 256 << 20
#: events per Parquet row group (CSV append) of ``crosstrace events``, gathered from reader chunks
#: of at most ``events.READ_EVENTS``; peak ~175 MB + ~110 B per row-group event, the same for any
#: recording length (measured: 290 MB at 1 Mi for 100 MB, 1 GB and 4 GB SystemView streams)
EVENTS_CHUNK = 1 << 20
