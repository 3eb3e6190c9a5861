# Build glue shared by the µC/OS-III and µC/OS-II ports (included by ports/ucos3/port.cmake and
# ports/ucos2/port.cmake, in the top directory's scope).
#  - The image revision (CMakeLists.txt) hashes ports/<rtos>/ only: this folder and the three SystemView
#    configuration headers the µC/OS recorder shares with the FreeRTOS port are added to it.
#  - ct_ucos_prefix_map(<FetchContent names>): no absolute path of a dependency reaches the image.
#  - ct_ucos_sysview(<Sample dir> <O= name> <kernel target> <config target>): the SystemView recorder.
include(FetchContent)
list(APPEND CT_APP_EXTRA_PATHS ucos ports/freertos/sysview/SEGGER_SYSVIEW_Conf.h
     ports/freertos/sysview/SEGGER_RTT_Conf.h ports/freertos/sysview/Global.h)

FetchContent_Declare(segger
  GIT_REPOSITORY https://github.com/zephyrproject-rtos/segger.git
  GIT_TAG cf56b1d9c80f81a26e2ac5727c9cf177116a4692) # SystemView 3.58 + RTT target sources
FetchContent_Declare(segger_sysview_ucos
  GIT_REPOSITORY https://github.com/SEGGERMicro/SystemView.git
  GIT_TAG a17c54e068eb1e878939dcb00b6c3334a52b2a15) # master 2025-11-21: Sample/uCOS-II, Sample/uCOS-III

function(ct_ucos_prefix_map)
  foreach(name IN LISTS ARGN)
    get_filename_component(dir "${${name}_SOURCE_DIR}" ABSOLUTE)
    add_compile_options("-ffile-prefix-map=${dir}=/ct/deps/${name}" "-fdebug-prefix-map=${dir}=/ct/deps/${name}")
  endforeach()
endfunction()

# mapped before any target exists (the kernel sees the glue's include folder too); segger itself is mapped
# by CMakeLists.txt (FETCHCONTENT_SOURCE_DIR_SEGGER)
if(CT_TRACE)
  FetchContent_MakeAvailable(segger segger_sysview_ucos)
  ct_ucos_prefix_map(segger_sysview_ucos)
endif()

function(ct_ucos_sysview sample os_name kernel cfg)
  if(NOT DEFINED CT_SV_BUFFER_SIZE)
    set(CT_SV_BUFFER_SIZE 16384)
  endif()
  target_compile_definitions(ct_api INTERFACE "CT_SV_BUFFER_SIZE=${CT_SV_BUFFER_SIZE}")
  set(ct_opts ${ct_opts} "CT_SV_BUFFER_SIZE=${CT_SV_BUFFER_SIZE}" PARENT_SCOPE)
  set(s "${segger_SOURCE_DIR}/SEGGER")
  set(g "${segger_sysview_ucos_SOURCE_DIR}/Sample/${sample}")
  # own configuration headers first (SEGGER_SYSVIEW_Conf.h, SEGGER_RTT_Conf.h, Global.h, os_cfg_trace.h)
  target_include_directories(${cfg} SYSTEM BEFORE INTERFACE "${CT_FW_DIR}/ports/freertos/sysview" "${s}" "${g}")
  file(GLOB glue "${g}/SEGGER_SYSVIEW_uCOS*.c")
  add_library(ct_sysview STATIC "${s}/SEGGER_SYSVIEW.c" "${s}/SEGGER_RTT.c" ${glue})
  target_link_libraries(ct_sysview PUBLIC ${cfg} ${kernel}) # the glue calls the kernel, the kernel the glue
  target_compile_options(ct_sysview PRIVATE -O2 -g)
  add_library(ct_sysview_ucos STATIC "${CT_FW_DIR}/ucos/ct_sysview_ucos.c")
  target_link_libraries(ct_sysview_ucos PUBLIC ct_sysview ${cfg})
  target_compile_definitions(ct_sysview_ucos PRIVATE "CT_SV_OS_NAME=\"${os_name}\"")
  target_compile_options(ct_sysview_ucos PRIVATE -O2 -g -Wall -Wextra -Werror)
  target_link_libraries(${kernel} PUBLIC ct_sysview)
  target_link_libraries(ct_rtos PUBLIC ct_sysview_ucos)
endfunction()
