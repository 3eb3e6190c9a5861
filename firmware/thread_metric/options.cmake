# Thread-Metric apps (apps/tm_<test>/options.cmake set CT_TM_TEST and include this file).
# Options (-D<name>=<value>, recorded in the image configuration):
#   CT_TM_PERIOD_MS   reporting period in ms of virtual time (TM_TEST_DURATION; the published runs: 30000)
#   CT_TM_PERIODS     reporting periods before the run ends
#   CT_TM_SITES       1: sites (tm.count / tm.isr / tm.report); 0: no instrumentation at all (pristine)
#   CT_TM_SITE_EVERY  iterations of a counting thread (or handler runs) per tm.count (tm.isr) site
#   CT_FREERTOS_CFG   FreeRTOS only: 1 = CubeIDE-like defaults (2024 report), 2 = tuned (ports/freertos/
#                     ct_freertos_profile.h), 0 = crosstrace's FreeRTOSConfig.h unchanged
set(CT_APP_OPTIONS "CT_TM_PERIOD_MS=20" "CT_TM_PERIODS=3" "CT_TM_SITES=1" "CT_TM_SITE_EVERY=256"
                   ${CT_TM_EXTRA_OPTIONS})
if(RTOS STREQUAL "freertos")
  list(APPEND CT_APP_OPTIONS "CT_FREERTOS_CFG=2")
endif()
# the porting layer's folder counts in the image revision (CMakeLists.txt: CT_APP_EXTRA_PATHS)
set(CT_APP_EXTRA_PATHS thread_metric)
# sources are added once the image target exists (end of the top directory)
cmake_language(DEFER CALL include "${CT_FW_DIR}/thread_metric/thread_metric.cmake")
