# tm_cooperative: Thread-Metric cooperative scheduling test (upstream source, thread_metric/README.md).
set(CT_TM_TEST cooperative_scheduling)
include("${CMAKE_CURRENT_LIST_DIR}/../../thread_metric/options.cmake")
