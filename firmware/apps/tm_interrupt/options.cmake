# tm_interrupt: Thread-Metric interrupt processing test (upstream source, thread_metric/README.md).
set(CT_TM_TEST interrupt_processing)
include("${CMAKE_CURRENT_LIST_DIR}/../../thread_metric/options.cmake")
