# µC/OS-II port: target ct_rtos = ct_port_ucos2.c + the kernel (uC-OS2 v2.93.01: ucos_ii.c, which includes
# every os_*.c, and the ARMv7-M GNU port) + with CT_TRACE=1 the SystemView recorder shared with µC/OS-III
# (firmware/ucos: SEGGER's Sample/uCOS-II glue, unchanged, on the SystemView/RTT core). Sources: FetchContent
# at pinned commits; offline, firmware.mk passes -DFETCHCONTENT_SOURCE_DIR_<NAME>=$(CT_DEPS_DIR)/<dir>.
# µC/OS-II has one task per priority and no round robin: ctx_switch (equal-priority tasks yielding) cannot
# run on it (ct_port_ucos2.c). Port option: CT_SV_BUFFER_SIZE (SystemView RTT up-buffer bytes, 16384).
include("${CT_FW_DIR}/ucos/ucos.cmake")
FetchContent_Declare(uc_os2
  GIT_REPOSITORY https://github.com/weston-embedded/uC-OS2.git
  GIT_TAG 0c4a48e6fbc6e915714e816196619a5481accf0c) # v2.93.01
FetchContent_MakeAvailable(uc_os2)
ct_ucos_prefix_map(uc_os2)

set(pdir "${CMAKE_CURRENT_LIST_DIR}")
set(k "${uc_os2_SOURCE_DIR}")
set(g "${k}/Ports/ARM-Cortex-M/ARMv7-M")
add_library(ucos2_cfg INTERFACE)
target_include_directories(ucos2_cfg SYSTEM INTERFACE "${pdir}" "${CT_FW_DIR}/ucos" "${k}/Source" "${g}/GNU")
target_link_libraries(ucos2_cfg INTERFACE ct_api)

add_library(ucos2_kernel STATIC "${k}/Source/ucos_ii.c" "${g}/os_cpu_c.c" "${g}/GNU/os_cpu_a.S" "${g}/GNU/os_dbg.c")
# The port's handlers become the vector table's names (boards/common/startup_stm32f4.c): no wrapper.
set_source_files_properties("${g}/os_cpu_c.c" PROPERTIES COMPILE_DEFINITIONS "OS_CPU_SysTickHandler=SysTick_Handler")
set_source_files_properties("${g}/GNU/os_cpu_a.S" PROPERTIES COMPILE_DEFINITIONS "OS_CPU_PendSVHandler=PendSV_Handler")
target_link_libraries(ucos2_kernel PUBLIC ucos2_cfg)
target_compile_options(ucos2_kernel PRIVATE -O2 -g)

add_library(ct_rtos STATIC "${pdir}/ct_port_ucos2.c")
target_compile_options(ct_rtos PRIVATE -O2 -g -Wall -Wextra -Werror)
target_link_libraries(ct_rtos PUBLIC ucos2_kernel ucos2_cfg ct_api)
# the kernel calls the App_* hooks defined in ct_port_ucos2.c
target_link_libraries(ucos2_kernel PUBLIC ct_rtos)
if(CT_TRACE)
  ct_ucos_sysview(uCOS-II uCOS-II ucos2_kernel ucos2_cfg)
endif()
set(CT_RTOS_VERSION "2.93.01")
set(CT_PORT_APPS calib periodic isr_latency fft_workload finegrained)
