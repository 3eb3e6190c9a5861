/* FreeRTOSConfig.h — crosstrace's FreeRTOS configuration (both boards): 1 kHz tick, 32 priorities (ct
 * priority p -> native 32 - p), no time slicing (equal-priority tasks switch only when they yield or
 * block, so a measured yield is never a tick preemption), no tickless idle and no WFI (QEMU time rule),
 * static allocation only (the port's static arrays; heap_4 is linked but stays unused). With CT_TRACE=1 the SystemView hooks (ct_sysview_freertos.h) are included at the end. */
#ifndef FREERTOS_CONFIG_H
#define FREERTOS_CONFIG_H

#include "board.h"

#define configUSE_PREEMPTION                    1
#define configUSE_TIME_SLICING                  0
#define configUSE_PORT_OPTIMISED_TASK_SELECTION 1
#define configUSE_TICKLESS_IDLE                 0
#define configCPU_CLOCK_HZ                      CT_BOARD_CPU_HZ
#define configTICK_RATE_HZ                      1000
#define configMAX_PRIORITIES                    32
#define configMINIMAL_STACK_SIZE                256
#define configMAX_TASK_NAME_LEN                 16
#define configTICK_TYPE_WIDTH_IN_BITS           TICK_TYPE_WIDTH_32_BITS
#define configIDLE_SHOULD_YIELD                 1
#define configUSE_TASK_NOTIFICATIONS            1
#define configUSE_MUTEXES                       1
#define configUSE_COUNTING_SEMAPHORES           1
#define configQUEUE_REGISTRY_SIZE               0
#define configUSE_QUEUE_SETS                    0
#define configSUPPORT_DYNAMIC_ALLOCATION        1 /* required by heap_4.c; nothing allocates */
#define configSUPPORT_STATIC_ALLOCATION         1
#define configKERNEL_PROVIDED_STATIC_MEMORY     1 /* idle task TCB and stack */
#define configTOTAL_HEAP_SIZE                   1024
#define configUSE_IDLE_HOOK                     1
#define configUSE_TICK_HOOK                     0
#define configCHECK_FOR_STACK_OVERFLOW          2
#define configUSE_MALLOC_FAILED_HOOK            1
#define configUSE_TRACE_FACILITY                0
#define configGENERATE_RUN_TIME_STATS           0
#define configUSE_TIMERS                        0
#define configUSE_CO_ROUTINES                   0
#define configENABLE_BACKWARD_COMPATIBILITY     0

/* Cortex-M4 interrupt priorities: 4 priority bits. */
#define configPRIO_BITS                         4
#define configKERNEL_INTERRUPT_PRIORITY         (15 << (8 - configPRIO_BITS))
#define configMAX_SYSCALL_INTERRUPT_PRIORITY    (5 << (8 - configPRIO_BITS))

#define INCLUDE_vTaskDelay                      1
#define INCLUDE_xTaskDelayUntil                 1
#define INCLUDE_vTaskSuspend                    1
#define INCLUDE_xTaskGetSchedulerState          1
#define INCLUDE_xTaskGetCurrentTaskHandle       1
#define INCLUDE_xTaskGetIdleTaskHandle          1

void ct_freertos_assert(const char *file, int line);
#define configASSERT(x) do { if (!(x)) ct_freertos_assert(__FILE__, __LINE__); } while (0)

/* CMSIS handler names used by the vector table. */
#define vPortSVCHandler     SVC_Handler
#define xPortPendSVHandler  PendSV_Handler
#define xPortSysTickHandler SysTick_Handler

/* Thread-Metric profiles (CT_FREERTOS_CFG 1 = CubeIDE-like, 2 = tuned): ct_freertos_profile.h. */
#if defined(CT_FREERTOS_CFG) && CT_FREERTOS_CFG != 0
#include "ct_freertos_profile.h"
#endif
#if defined(CT_TRACE) && CT_TRACE && !defined(__ASSEMBLER__)
#include "ct_sysview_freertos.h"
#endif

#endif
