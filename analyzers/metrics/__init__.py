"""Metric definitions: the registry of every metric id, and the kernel-event metrics.

- :mod:`.registry` — every metric id: unit, which sources can produce it, cross-validated or not;
- :mod:`.sched` — scheduling facts shared by the metrics (which switch-in an interrupt caused);
- :mod:`.kernel` — per-task / per-ISR / per-core instance timing from the RTOS's events alone.
"""
