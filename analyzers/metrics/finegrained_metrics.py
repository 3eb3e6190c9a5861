"""Metric declarations of the fine-grained benchmarks (``analyzers.metrics.finegrained``), as plain
rows that ``registry.METRICS`` turns into ``MetricDef`` (id, unit, sources, cross-validated, family,
module, doc). Tests G and H use the registered ``isr.to_task.latency`` and ``periodic.<name>.*``."""

METRICS = (
    ("fg.<name>", "ns", ("trace", "logic"), True, "site", "analyzers.metrics.finegrained",
     "fine-grained test A-F: one kernel call between two tm.count sites (fg.<test>.<call>)"),
)
