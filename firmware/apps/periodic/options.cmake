# periodic: a fast and a slow task with delay-until periods; CT_LOAD=1 adds a lowest-priority CPU hog.
set(CT_APP_OPTIONS "CT_PERIOD_FAST_MS=10" "CT_PERIOD_SLOW_MS=100" "CT_DURATION_MS=1000" "CT_LOAD=0")
