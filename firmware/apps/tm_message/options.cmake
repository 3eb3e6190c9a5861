# tm_message: Thread-Metric message processing test (upstream source, thread_metric/README.md).
set(CT_TM_TEST message_processing)
include("${CMAKE_CURRENT_LIST_DIR}/../../thread_metric/options.cmake")
