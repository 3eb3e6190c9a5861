# ThreadX port: target ct_rtos = ct_port_threadx.c + the ThreadX kernel (threadx.cmake, pinned commit).
# Port options (-D<name>=<value>, recorded in the image configuration):
#   CT_TX_TRACE_BYTES  TraceX buffer size in bytes (CT_TRACE=1); 0 (default) = all RAM left after the stacks
#   CT_TX_EXEC_PIN     GPIOG pin driven by the execution-change hooks (high while a thread runs), -1 = off
#   CT_TX_TRACE_FILTER tx_trace_event_filter() mask of ThreadX event groups not to record (e.g. 0x40 =
#                      queue services), 0 = record everything; user events (the sites) are always kept
include("${CMAKE_CURRENT_LIST_DIR}/threadx.cmake")

foreach(kv "CT_TX_TRACE_BYTES=0" "CT_TX_EXEC_PIN=-1" "CT_TX_TRACE_FILTER=0")
  string(REPLACE "=" ";" kvl "${kv}")
  list(GET kvl 0 name)
  list(GET kvl 1 default)
  if(NOT DEFINED ${name})
    set(${name} "${default}")
  endif()
  target_compile_definitions(ct_api INTERFACE "${name}=${${name}}")
  list(APPEND ct_opts "${name}=${${name}}")
endforeach()

add_library(ct_rtos STATIC "${CMAKE_CURRENT_LIST_DIR}/ct_port_threadx.c")
target_link_libraries(ct_rtos PUBLIC ct_api threadx)
target_compile_options(ct_rtos PRIVATE -O2 -g -Wall -Wextra -Werror)
set(CT_RTOS_VERSION "${CT_THREADX_VERSION}")
