# µC/OS-III port: target ct_rtos = ct_port_ucos3.c + the kernel (uC-OS3 v3.08.02 with uC-CPU v1.32.01 and
# uC-LIB v1.39.01, ARMv7-M GNU port) + with CT_TRACE=1 the SystemView recorder: SEGGER's µC/OS glue
# (SEGGERMicro/SystemView Sample/uCOS-III, unchanged) on the SystemView/RTT core (zephyrproject-rtos/segger,
# as the FreeRTOS port) and firmware/ucos/ct_sysview_ucos.c. Sources: FetchContent at pinned commits;
# offline, firmware.mk passes -DFETCHCONTENT_SOURCE_DIR_<NAME>=$(CT_DEPS_DIR)/<dir> for each.
# Port option: CT_SV_BUFFER_SIZE (SystemView RTT up-buffer bytes, 16384).
include("${CT_FW_DIR}/ucos/ucos.cmake")
FetchContent_Declare(uc_os3
  GIT_REPOSITORY https://github.com/weston-embedded/uC-OS3.git
  GIT_TAG 93d6e79023f1031480c20f479ca7662f3f1c3c3a) # v3.08.02
FetchContent_Declare(uc_cpu
  GIT_REPOSITORY https://github.com/weston-embedded/uC-CPU.git
  GIT_TAG fe140a6f4d65636b43b3a6a03c6f63b50dc2c5bc) # v1.32.01
FetchContent_Declare(uc_lib
  GIT_REPOSITORY https://github.com/weston-embedded/uC-LIB.git
  GIT_TAG 68e44026f0173399e2dbfa2ed873f3b261b3b815) # v1.39.01
FetchContent_MakeAvailable(uc_os3 uc_cpu uc_lib)
ct_ucos_prefix_map(uc_os3 uc_cpu uc_lib)

set(pdir "${CMAKE_CURRENT_LIST_DIR}")
set(k "${uc_os3_SOURCE_DIR}")
set(c "${uc_cpu_SOURCE_DIR}")
set(l "${uc_lib_SOURCE_DIR}")
add_library(ucos3_cfg INTERFACE)
target_include_directories(ucos3_cfg SYSTEM INTERFACE "${pdir}" "${CT_FW_DIR}/ucos" "${k}/Source" "${k}/Ports/ARM-Cortex-M/ARMv7-M/GNU"
  "${c}" "${c}/ARM-Cortex-M/ARMv7-M/GNU" "${l}")
target_link_libraries(ucos3_cfg INTERFACE ct_api)

file(GLOB kernel_sources "${k}/Source/os_*.c")
add_library(ucos3_kernel STATIC ${kernel_sources}
  "${k}/Ports/ARM-Cortex-M/ARMv7-M/os_cpu_c.c" "${k}/Ports/ARM-Cortex-M/ARMv7-M/GNU/os_cpu_a.S"
  "${c}/cpu_core.c" "${c}/ARM-Cortex-M/ARMv7-M/cpu_c.c" "${c}/ARM-Cortex-M/ARMv7-M/GNU/cpu_a.s"
  "${l}/lib_mem.c" "${l}/lib_str.c" "${l}/lib_ascii.c" "${l}/lib_math.c")
# The port's handlers become the vector table's names (boards/common/startup_stm32f4.c): no wrapper.
set_source_files_properties("${k}/Ports/ARM-Cortex-M/ARMv7-M/os_cpu_c.c" PROPERTIES
  COMPILE_DEFINITIONS "OS_CPU_SysTickHandler=SysTick_Handler")
set_source_files_properties("${k}/Ports/ARM-Cortex-M/ARMv7-M/GNU/os_cpu_a.S" PROPERTIES
  COMPILE_DEFINITIONS "OS_CPU_PendSVHandler=PendSV_Handler")
target_link_libraries(ucos3_kernel PUBLIC ucos3_cfg)
target_compile_options(ucos3_kernel PRIVATE -O2 -g)

add_library(ct_rtos STATIC "${pdir}/ct_port_ucos3.c")
target_compile_options(ct_rtos PRIVATE -O2 -g -Wall -Wextra -Werror)
target_link_libraries(ct_rtos PUBLIC ucos3_kernel ucos3_cfg ct_api)
if(CT_TRACE)
  ct_ucos_sysview(uCOS-III uCOS-III ucos3_kernel ucos3_cfg)
endif()
set(CT_RTOS_VERSION "3.08.02")
