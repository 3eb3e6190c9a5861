# tm_memory: Thread-Metric memory allocation test (upstream source, thread_metric/README.md).
set(CT_TM_TEST memory_allocation)
include("${CMAKE_CURRENT_LIST_DIR}/../../thread_metric/options.cmake")
