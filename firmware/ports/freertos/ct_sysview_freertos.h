/* ct_sysview_freertos.h — crosstrace's FreeRTOS -> SystemView glue (our own, included at the end of
 * FreeRTOSConfig.h when CT_TRACE=1). Scheduler events map to SystemView system events; kernel API calls
 * are recorded with the ids of SEGGER's FreeRTOS description file (SYSVIEW_FreeRTOS.txt: 32 + apiID,
 * e.g. vTaskDelay = 35, xQueueGenericSend = 90), so the SystemView app names them. Expanded inside
 * tasks.c / queue.c, where the named locals exist. */
#ifndef CT_SYSVIEW_FREERTOS_H
#define CT_SYSVIEW_FREERTOS_H

#include "SEGGER_SYSVIEW.h"

void ct_sv_task_created(unsigned long tcb, const char *name, unsigned prio, unsigned long stack_base);

#define CT_SV_API(n) (32u + (n))
#define CT_SV_API_VTASKDELAY             3u
#define CT_SV_API_VTASKDELAYUNTIL        4u
#define CT_SV_API_XQUEUEGENERICSEND      58u
#define CT_SV_API_XQUEUEGENERICRECEIVE   60u
#define CT_SV_API_XQUEUEGENERICSENDFROMISR 64u
#define CT_SV_API_XQUEUEGIVEFROMISR      65u
#define CT_SV_API_XQUEUEGENERICCREATE    83u
#define CT_SV_ID(p) SEGGER_SYSVIEW_ShrinkId((U32)(p))

/* The idle task is the only task at priority 0 (ct priorities map to 1..31). */
#define traceTASK_SWITCHED_IN()                                                      \
    do {                                                                             \
        if (pxCurrentTCB->uxPriority == tskIDLE_PRIORITY) SEGGER_SYSVIEW_OnIdle();    \
        else SEGGER_SYSVIEW_OnTaskStartExec((U32)pxCurrentTCB);                       \
    } while (0)
#define traceMOVED_TASK_TO_READY_STATE(pxTCB) SEGGER_SYSVIEW_OnTaskStartReady((U32)(pxTCB))
#define traceMOVED_TASK_TO_DELAYED_LIST() SEGGER_SYSVIEW_OnTaskStopReady((U32)pxCurrentTCB, (1u << 2))
#define traceMOVED_TASK_TO_OVERFLOW_DELAYED_LIST() SEGGER_SYSVIEW_OnTaskStopReady((U32)pxCurrentTCB, (1u << 2))
#define traceMOVED_TASK_TO_SUSPENDED_LIST(pxTCB) SEGGER_SYSVIEW_OnTaskStopReady((U32)(pxTCB), ((3u << 3) | 3u))
#define traceTASK_CREATE(pxNewTCB)                                                            \
    do {                                                                                      \
        if ((pxNewTCB) != NULL)                                                               \
            ct_sv_task_created((unsigned long)(pxNewTCB), &(pxNewTCB)->pcTaskName[0],          \
                               (unsigned)(pxNewTCB)->uxPriority, (unsigned long)(pxNewTCB)->pxStack); \
    } while (0)

#define traceISR_ENTER()             SEGGER_SYSVIEW_RecordEnterISR()
#define traceISR_EXIT()              SEGGER_SYSVIEW_RecordExitISR()
#define traceISR_EXIT_TO_SCHEDULER() SEGGER_SYSVIEW_RecordExitISRToScheduler()

#define traceTASK_DELAY() SEGGER_SYSVIEW_RecordU32(CT_SV_API(CT_SV_API_VTASKDELAY), xTicksToDelay)
#define traceTASK_DELAY_UNTIL(xTimeToWake) \
    SEGGER_SYSVIEW_RecordU32(CT_SV_API(CT_SV_API_VTASKDELAYUNTIL), (U32)(xTimeToWake))
#define traceQUEUE_CREATE(pxNewQueue) \
    SEGGER_SYSVIEW_RecordU32x3(CT_SV_API(CT_SV_API_XQUEUEGENERICCREATE), CT_SV_ID(pxNewQueue), \
                               (U32)(pxNewQueue)->uxLength, (U32)(pxNewQueue)->uxItemSize)
#define traceQUEUE_SEND(pxQueue) \
    SEGGER_SYSVIEW_RecordU32x4(CT_SV_API(CT_SV_API_XQUEUEGENERICSEND), CT_SV_ID(pxQueue), 0u, \
                               (U32)xTicksToWait, (U32)xCopyPosition)
#define traceQUEUE_RECEIVE(pxQueue) \
    SEGGER_SYSVIEW_RecordU32x4(CT_SV_API(CT_SV_API_XQUEUEGENERICRECEIVE), CT_SV_ID(pxQueue), 0u, \
                               (U32)xTicksToWait, 1u)
#define traceQUEUE_SEND_FROM_ISR(pxQueue) \
    SEGGER_SYSVIEW_RecordU32x2(CT_SV_API(CT_SV_API_XQUEUEGENERICSENDFROMISR), CT_SV_ID(pxQueue), \
                               (U32)pxHigherPriorityTaskWoken)

#endif
