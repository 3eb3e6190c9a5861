# tm_interrupt_preemption: Thread-Metric interrupt preemption processing test (upstream source, thread_metric/README.md).
set(CT_TM_TEST interrupt_preemption_processing)
include("${CMAKE_CURRENT_LIST_DIR}/../../thread_metric/options.cmake")
