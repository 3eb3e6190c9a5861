# RTOSBench: one upstream test (tests/<group>/<test>.c of the RTOSBench tree given by
# -DFETCHCONTENT_SOURCE_DIR_RTOSBENCH, which `make fw` / `make fw-zephyr` pass as $(CT_DEPS_DIR)/RTOSBench;
# never copied into this repository) + this folder's port (rb_port_ct.c, include/: config.h, trace.h) + the
# mutex extension of the RTOS (ext/). Deferred from apps/rtosbench/options.cmake to the end of the top-level
# CMakeLists.txt, where the image target exists: `ct` (FreeRTOS, ThreadX), Zephyr's `app`.
set(rb_tests "round_robin=context-switch/round_robin:1" "interrupt_processing=interrupt/interrupt_processing:1"
             "mutex=mutex/mutex:2" "mq=mq/mq:2" "sem=semaphore/sem:2" "jitter=partition/jitter:0")
set(rb_src "")
foreach(t IN LISTS rb_tests)
  if(t MATCHES "^${CT_RB_TEST}=(.+):([0-9])$")
    set(rb_src "${CMAKE_MATCH_1}.c")
    set(rb_reports "${CMAKE_MATCH_2}")
  endif()
endforeach()
if(rb_src STREQUAL "")
  message(FATAL_ERROR "Invalid value for CT_RB_TEST: '${CT_RB_TEST}'. Allowed values are: round_robin "
                      "interrupt_processing mutex mq sem jitter")
endif()
if(NOT FETCHCONTENT_SOURCE_DIR_RTOSBENCH OR NOT EXISTS "${FETCHCONTENT_SOURCE_DIR_RTOSBENCH}/include/porting_layer.h")
  message(FATAL_ERROR "RTOSBench sources not found: -DFETCHCONTENT_SOURCE_DIR_RTOSBENCH=<dir> "
                      "(make fw passes $(CT_DEPS_DIR)/RTOSBench; ../shared/deps/extract.sh puts it there)")
endif()
get_filename_component(rb_dir "${FETCHCONTENT_SOURCE_DIR_RTOSBENCH}" ABSOLUTE)
set(rb_app "${CMAKE_CURRENT_LIST_DIR}")
if(DEFINED CT_ZEPHYR_DIR)
  set(rb_target app)
  set(rb_ext "${rb_app}/ext/ct_mutex_zephyr.c")
  set(rb_retune 0)
else()
  set(rb_target ct)
  set(rb_ext "${rb_app}/ext/ct_mutex_${RTOS}.c")
  set(rb_retune 1)
endif()
if(NOT EXISTS "${rb_ext}")
  message(FATAL_ERROR "APP=rtosbench: no mutex for the ${RTOS} port (${rb_ext})")
endif()
set(rb_test_src "${rb_dir}/tests/${rb_src}")
target_sources(${rb_target} PRIVATE "${rb_app}/rb_port_ct.c" "${rb_test_src}" "${rb_ext}")
target_include_directories(${rb_target} PRIVATE "${rb_app}/ext")
target_compile_options(${rb_target} PRIVATE "-ffile-prefix-map=${rb_dir}=/ct/deps/rtosbench"
                                            "-fdebug-prefix-map=${rb_dir}=/ct/deps/rtosbench")
# config.h and trace.h are generic names: only RTOSBench's files and the port see this include path
set(rb_incs "${rb_app}/include;${rb_dir}/include")
set(rb_defs "TRACING;CT_RB_REPORTS=${rb_reports};CT_RB_RETUNE_SYSTICK=${rb_retune}")
set_source_files_properties("${rb_test_src}" "${rb_app}/rb_port_ct.c" PROPERTIES
                            INCLUDE_DIRECTORIES "${rb_incs}" COMPILE_DEFINITIONS "${rb_defs}")
# upstream code as it is (missing returns, unused parameters, K&R-style prototypes): its warnings are not ours
set_source_files_properties("${rb_test_src}" PROPERTIES COMPILE_OPTIONS "-w")
