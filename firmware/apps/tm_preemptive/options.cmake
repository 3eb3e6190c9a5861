# tm_preemptive: Thread-Metric preemptive scheduling test (upstream source, thread_metric/README.md).
set(CT_TM_TEST preemptive_scheduling)
include("${CMAKE_CURRENT_LIST_DIR}/../../thread_metric/options.cmake")
