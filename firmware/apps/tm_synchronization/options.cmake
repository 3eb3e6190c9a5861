# tm_synchronization: Thread-Metric synchronization processing test (upstream source, thread_metric/README.md).
set(CT_TM_TEST synchronization_processing)
include("${CMAKE_CURRENT_LIST_DIR}/../../thread_metric/options.cmake")
