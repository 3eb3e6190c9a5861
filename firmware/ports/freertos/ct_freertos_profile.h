/* ct_freertos_profile.h — the two FreeRTOS configurations of the Thread-Metric campaign, selected with
 * CT_FREERTOS_CFG (apps/tm_* options; 0 = crosstrace's own FreeRTOSConfig.h unchanged). Included at the
 * end of FreeRTOSConfig.h; it only overrides the settings that differ.
 *   1 "cubeide": what STM32CubeIDE/CubeMX generates by default for a CMSIS-RTOS2 FreeRTOS project (the
 *     configuration of the 2024 RTOS Performance Report): 56 priorities with the generic (C) task
 *     selection, time slicing on (kernel default), trace facility, queue registry, software timers,
 *     no stack-overflow check, configASSERT on, heap_4. Kept from crosstrace: the idle hook (it drains
 *     the SystemView buffer; empty body when CT_TRACE=0) and the static kernel memory.
 *   2 "tuned": 32 priorities with the CLZ task selection, no time slicing, no asserts, no stack-overflow
 *     or malloc-failed checks, no trace facility, no timers, heap_4. */
#ifndef CT_FREERTOS_PROFILE_H
#define CT_FREERTOS_PROFILE_H

#undef configUSE_PORT_OPTIMISED_TASK_SELECTION
#undef configMAX_PRIORITIES
#undef configUSE_TIME_SLICING
#undef configCHECK_FOR_STACK_OVERFLOW
#undef configUSE_MALLOC_FAILED_HOOK
#undef configUSE_TRACE_FACILITY
#undef configQUEUE_REGISTRY_SIZE
#undef configUSE_TIMERS
#undef configTOTAL_HEAP_SIZE

#if CT_FREERTOS_CFG == 1
#define configUSE_PORT_OPTIMISED_TASK_SELECTION 0
#define configMAX_PRIORITIES                    56
#define configUSE_TIME_SLICING                  1
#define configCHECK_FOR_STACK_OVERFLOW          0
#define configUSE_MALLOC_FAILED_HOOK            0
#define configUSE_TRACE_FACILITY                1
#define configQUEUE_REGISTRY_SIZE               8
#define configUSE_RECURSIVE_MUTEXES             1
#define configUSE_TIMERS                        1
#define configTIMER_TASK_PRIORITY               2
#define configTIMER_QUEUE_LENGTH                10
#define configTIMER_TASK_STACK_DEPTH            256
#define configTOTAL_HEAP_SIZE                   15360
#elif CT_FREERTOS_CFG == 2
#define configUSE_PORT_OPTIMISED_TASK_SELECTION 1
#define configMAX_PRIORITIES                    32
#define configUSE_TIME_SLICING                  0
#define configCHECK_FOR_STACK_OVERFLOW          0
#define configUSE_MALLOC_FAILED_HOOK            0
#define configUSE_TRACE_FACILITY                0
#define configQUEUE_REGISTRY_SIZE               0
#define configUSE_TIMERS                        0
#define configTOTAL_HEAP_SIZE                   4096
#undef configASSERT
#else
#error "CT_FREERTOS_CFG: 0 (crosstrace), 1 (cubeide) or 2 (tuned)"
#endif

#endif
