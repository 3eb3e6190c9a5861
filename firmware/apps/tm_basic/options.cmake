# tm_basic: Thread-Metric basic processing test (upstream source, thread_metric/README.md).
set(CT_TM_TEST basic_processing)
# CT_TM_SAMPLE_US: TIM5 sampler period (the thread calls no service, so tm.count is fired from TIM5)
set(CT_TM_EXTRA_OPTIONS "CT_TM_THREADS=1" "CT_TM_ORDER=0" "CT_TM_SAMPLE_US=100")
include("${CMAKE_CURRENT_LIST_DIR}/../../thread_metric/options.cmake")
