# Thread-Metric: the upstream test (ThreadX's utility/benchmarks/thread_metric at the pinned ThreadX commit,
# never copied into this repository) + this folder's porting layer, added to the image target `ct`.
# Deferred from options.cmake to the end of the top-level CMakeLists.txt. With RTOS=threadx the ThreadX
# sources are already populated by ports/threadx/threadx.cmake; otherwise they are fetched here for the
# test sources only (SOURCE_SUBDIR without a CMakeLists.txt: nothing of ThreadX is built). Offline:
# -DFETCHCONTENT_SOURCE_DIR_THREADX=<dir> (firmware.mk passes $(CT_DEPS_DIR)/threadx).
include(FetchContent)
if(NOT RTOS STREQUAL "threadx")
  FetchContent_Declare(threadx
    GIT_REPOSITORY https://github.com/eclipse-threadx/threadx.git
    GIT_TAG 7ad78c40e9702917264a9b722890110fdb909ebc # = ports/threadx/threadx.cmake CT_THREADX_COMMIT
    SOURCE_SUBDIR utility/benchmarks/thread_metric)
  FetchContent_MakeAvailable(threadx)
  if(FETCHCONTENT_SOURCE_DIR_THREADX)
    get_filename_component(tm_dep_dir "${FETCHCONTENT_SOURCE_DIR_THREADX}" ABSOLUTE)
    target_compile_options(ct PRIVATE "-ffile-prefix-map=${tm_dep_dir}=/ct/deps/threadx")
  endif()
endif()
set(tm_upstream "${threadx_SOURCE_DIR}/utility/benchmarks/thread_metric")
set(tm_test_src "${tm_upstream}/tm_${CT_TM_TEST}_test.c")
if(NOT EXISTS "${tm_test_src}")
  message(FATAL_ERROR "Thread-Metric test source not found: ${tm_test_src} (ThreadX sources without "
                      "utility/benchmarks/thread_metric?)")
endif()
# the app's descriptor (tm_ct.h) lives here too: apps/tm_<test>/ holds only options.cmake and README.md
string(REGEX REPLACE "^tm_" "" tm_short "${APP}")
target_sources(ct PRIVATE "${CMAKE_CURRENT_LIST_DIR}/tm_port_ct.c" "${CMAKE_CURRENT_LIST_DIR}/tm_app_${tm_short}.c"
                          "${tm_test_src}")
target_include_directories(ct PRIVATE "${CMAKE_CURRENT_LIST_DIR}" "${tm_upstream}")
target_compile_definitions(ct PRIVATE "TM_TEST_DURATION=${CT_TM_PERIOD_MS}")
# Upstream code as it is (K&R-style prototypes, unused variables: its warnings are not ours). Our
# tm_porting_layer.h is pre-included: it has upstream's include guard, so upstream's own (IAR/SVC specific,
# found first by tm_api.h's quoted include) becomes empty.
set(tm_test_opts "-w;-include;${CMAKE_CURRENT_LIST_DIR}/tm_porting_layer.h")
if(CT_TM_TEST STREQUAL "basic_processing")
  # Its counter is a plain global incremented in an endless loop without calls: GCC's loop store motion
  # keeps it in a register and never stores it, so the report reads 0 ("thread died"). Zephyr's copy makes
  # it volatile (a source change); we keep the source and turn off that one optimisation for this file.
  list(APPEND tm_test_opts "-fno-tree-loop-im")
endif()
set_source_files_properties("${tm_test_src}" PROPERTIES COMPILE_OPTIONS "${tm_test_opts}")
