# ThreadX kernel library (target `threadx`) at a pinned upstream commit, built by ThreadX's own CMake for
# cortex_m4/gnu with ports/threadx/tx_user.h as TX_USER_FILE. Offline: configure with
# -DFETCHCONTENT_SOURCE_DIR_THREADX=<extracted tree> (firmware.mk does this when $(CT_DEPS_DIR)/threadx
# exists). Included by ports/threadx/port.cmake; never commit the fetched sources.
include(FetchContent)

# eclipse-threadx/threadx v6.4.2 (merge of PR #387, 2025-02-27), the commit qemu-lab.md and tracex.md name.
set(CT_THREADX_COMMIT 7ad78c40e9702917264a9b722890110fdb909ebc)
set(CT_THREADX_VERSION 6.4.2)

FetchContent_Declare(threadx
  GIT_REPOSITORY https://github.com/eclipse-threadx/threadx.git
  GIT_TAG ${CT_THREADX_COMMIT})

set(THREADX_ARCH cortex_m4 CACHE STRING "ThreadX port architecture" FORCE)
set(THREADX_TOOLCHAIN gnu CACHE STRING "ThreadX port toolchain" FORCE)
set(TX_USER_FILE "${CMAKE_CURRENT_LIST_DIR}/tx_user.h" CACHE FILEPATH "ThreadX user configuration" FORCE)
FetchContent_MakeAvailable(threadx)

# The kernel sees the same CT_TRACE/CT_* options and board.h (TX_TRACE_TIME_SOURCE = ct_ts()) as the app,
# and is optimised like it (the firmware build leaves CMAKE_BUILD_TYPE empty).
target_link_libraries(threadx PRIVATE ct_api)
target_compile_options(threadx PRIVATE -O2 -g)
# tx_user.h is copied into ThreadX's build tree: reconfigure when it changes.
set_property(DIRECTORY "${CT_FW_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${CMAKE_CURRENT_LIST_DIR}/tx_user.h")
