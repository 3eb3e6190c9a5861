"""crosstrace benchmarks (`make bench`): speed and memory against the named peers."""
