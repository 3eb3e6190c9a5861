# Bare-metal port: no RTOS and no third-party code. One task runs as the main loop; SysTick keeps a
# 1 kHz tick; semaphores and queues are ISR-safe counters and rings polled by that loop.
add_library(ct_rtos STATIC "${CT_FW_DIR}/ports/baremetal/ct_port_baremetal.c")
target_link_libraries(ct_rtos PUBLIC ct_api)
target_compile_options(ct_rtos PRIVATE -O2 -g -Wall -Wextra -Werror)
set(CT_RTOS_VERSION "none")
set(CT_PORT_APPS calib isr_latency)
