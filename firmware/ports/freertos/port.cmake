# FreeRTOS port: FreeRTOS-Kernel through its own CMake support (FREERTOS_PORT GCC_ARM_CM4F, heap_4,
# freertos_config interface library), plus SEGGER SystemView/RTT target sources when CT_TRACE=1.
# Both come from FetchContent at pinned commits; offline use -DFETCHCONTENT_SOURCE_DIR_FREERTOS_KERNEL=<dir>
# and -DFETCHCONTENT_SOURCE_DIR_SEGGER=<dir> (firmware.mk passes them for $(CT_DEPS_DIR)/<name>).
include(FetchContent)
FetchContent_Declare(freertos_kernel
  GIT_REPOSITORY https://github.com/FreeRTOS/FreeRTOS-Kernel.git
  GIT_TAG 4269c69a16f924c11adeedbb31591f6fad9f41b2) # V11.1.0+ (main, 2024)
FetchContent_Declare(segger
  GIT_REPOSITORY https://github.com/zephyrproject-rtos/segger.git
  GIT_TAG cf56b1d9c80f81a26e2ac5727c9cf177116a4692) # SystemView 3.58 + RTT target sources

set(pdir "${CT_FW_DIR}/ports/freertos")
add_library(freertos_config INTERFACE)
target_include_directories(freertos_config SYSTEM INTERFACE "${pdir}" "${pdir}/sysview")
target_link_libraries(freertos_config INTERFACE ct_api)
set(FREERTOS_PORT GCC_ARM_CM4F CACHE STRING "" FORCE)
set(FREERTOS_HEAP 4 CACHE STRING "" FORCE)

add_library(ct_rtos STATIC "${pdir}/ct_port_freertos.c")
target_compile_options(ct_rtos PRIVATE -O2 -g -Wall -Wextra -Werror)
if(CT_TRACE)
  # port option: SystemView RTT up-buffer size (recorded in the image configuration)
  if(NOT DEFINED CT_SV_BUFFER_SIZE)
    set(CT_SV_BUFFER_SIZE 16384)
  endif()
  target_compile_definitions(ct_api INTERFACE "CT_SV_BUFFER_SIZE=${CT_SV_BUFFER_SIZE}")
  list(APPEND ct_opts "CT_SV_BUFFER_SIZE=${CT_SV_BUFFER_SIZE}")
  FetchContent_MakeAvailable(segger)
  set(sdir "${segger_SOURCE_DIR}/SEGGER")
  target_include_directories(freertos_config SYSTEM INTERFACE "${sdir}")
  add_library(ct_sysview STATIC "${sdir}/SEGGER_SYSVIEW.c" "${sdir}/SEGGER_RTT.c" "${pdir}/sysview/ct_sysview.c")
  target_link_libraries(ct_sysview PUBLIC freertos_kernel freertos_config)
  target_compile_options(ct_sysview PRIVATE -O2 -g)
  target_link_libraries(ct_rtos PUBLIC ct_sysview)
endif()
FetchContent_MakeAvailable(freertos_kernel)
target_compile_options(freertos_kernel PRIVATE -O2 -g)
target_link_libraries(ct_rtos PUBLIC freertos_kernel freertos_config ct_api)

file(STRINGS "${freertos_kernel_SOURCE_DIR}/include/task.h" ver REGEX "define tskKERNEL_VERSION_NUMBER")
string(REGEX MATCH "\"([^\"]+)\"" _ "${ver}")
set(CT_RTOS_VERSION "${CMAKE_MATCH_1}")
