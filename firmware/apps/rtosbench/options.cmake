# rtosbench: RTOSBench's tests (upstream sources from CT_DEPS_DIR/RTOSBench, never copied) on the porting
# layer, in its TRACING mode (firmware/rtosbench/README.md). CT_RB_TEST: round_robin, interrupt_processing,
# mutex, mq, sem, jitter; CT_RB_ITER: NB_ITER; CT_RB_TICK_HZ: the kernel tick (20: the published
# configuration); CT_PERIOD_FAST_MS: jitter's nominal activation period, the name the periodicity analyzer reads.
set(CT_APP_OPTIONS "CT_RB_TEST=round_robin" "CT_RB_ITER=1000" "CT_RB_TICK_HZ=20" "CT_PERIOD_FAST_MS=50")
if(RTOS STREQUAL "freertos")
  # asserts, stack-overflow and malloc-failed checks off (the published configuration): the "tuned" profile
  # of ports/freertos/ct_freertos_profile.h (also no time slicing, CLZ task selection, as crosstrace's own)
  list(APPEND CT_APP_OPTIONS "CT_FREERTOS_CFG=2")
endif()
if(DEFINED CT_ZEPHYR_DIR)
  # Zephyr: the tick is a Kconfig option (the other ports' SysTick is reloaded by rb_port_ct.c)
  list(APPEND EXTRA_CONF_FILE "${CT_FW_DIR}/rtosbench/zephyr.conf")
endif()
# the port's folder counts in the image revision (CMakeLists.txt: CT_APP_EXTRA_PATHS)
set(CT_APP_EXTRA_PATHS rtosbench)
# the test source and the port are added once the image target exists (end of the top directory)
cmake_language(DEFER CALL include "${CT_FW_DIR}/rtosbench/rtosbench.cmake")
