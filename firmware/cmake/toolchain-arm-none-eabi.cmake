# Toolchain file: GNU Arm Embedded (arm-none-eabi-gcc, newlib-nano), Cortex-M4F hard-float.
# Set ARM_TOOLCHAIN_PREFIX to use a toolchain that is not on PATH (e.g. /opt/gcc-arm/bin/arm-none-eabi-).
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(ARM_TOOLCHAIN_PREFIX "arm-none-eabi-" CACHE STRING "prefix of the cross tools")
set(CMAKE_C_COMPILER ${ARM_TOOLCHAIN_PREFIX}gcc)
set(CMAKE_ASM_COMPILER ${ARM_TOOLCHAIN_PREFIX}gcc)
set(CMAKE_OBJCOPY ${ARM_TOOLCHAIN_PREFIX}objcopy CACHE FILEPATH "")
set(CMAKE_SIZE ${ARM_TOOLCHAIN_PREFIX}size CACHE FILEPATH "")
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(CT_CPU_FLAGS "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16")
set(CMAKE_C_FLAGS_INIT "${CT_CPU_FLAGS} -ffunction-sections -fdata-sections")
set(CMAKE_ASM_FLAGS_INIT "${CT_CPU_FLAGS}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${CT_CPU_FLAGS} --specs=nano.specs --specs=nosys.specs -Wl,--gc-sections")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
