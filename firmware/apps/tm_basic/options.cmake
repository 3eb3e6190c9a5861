# tm_basic: Thread-Metric basic processing test (upstream source, thread_metric/README.md).
set(CT_TM_TEST basic_processing)
set(CT_TM_EXTRA_OPTIONS "CT_TM_SAMPLE_US=100") # TIM5 sampler period (the thread calls no service)
include("${CMAKE_CURRENT_LIST_DIR}/../../thread_metric/options.cmake")
