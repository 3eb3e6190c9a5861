# tm_interrupt_preemption: Thread-Metric interrupt preemption processing test (upstream source, thread_metric/README.md).
set(CT_TM_TEST interrupt_preemption_processing)
# CT_TM_THREADS: counting threads; CT_TM_ORDER: their ids in the order their tm.count sites fire within
# one round (the analyzer reads both from run.json to name per-thread metrics)
set(CT_TM_EXTRA_OPTIONS "CT_TM_THREADS=2" "CT_TM_ORDER=1-0")
include("${CMAKE_CURRENT_LIST_DIR}/../../thread_metric/options.cmake")
