/* ct_port_freertos.c — the porting layer on FreeRTOS: objects created statically (xTaskCreateStatic, ...)
 * in static arrays indexed by ct ids, stacks and queue storage carved from fixed pools (no heap);
 * ct priority p -> native configMAX_PRIORITIES - p, pdPASS/pdFAIL/errQUEUE_* mapped to CT_* explicitly.
 * ISR wrappers record enter/exit once: portYIELD_FROM_ISR emits traceISR_EXIT[_TO_SCHEDULER]. */
#include "FreeRTOS.h"
#include "queue.h"
#include "semphr.h"
#include "task.h"

#include "ct_board.h"
#include "ct_port.h"

#ifndef CT_FREERTOS_STACK_POOL_WORDS
#define CT_FREERTOS_STACK_POOL_WORDS 8192u /* 32 KB for all task stacks */
#endif
#define CT_FREERTOS_QUEUE_POOL_MSGS 64u

static TaskHandle_t tasks[CT_MAX_TASKS];
static StaticTask_t task_tcbs[CT_MAX_TASKS];
static StackType_t stack_pool[CT_FREERTOS_STACK_POOL_WORDS];
static unsigned stack_used;
static SemaphoreHandle_t sems[CT_MAX_SEMS];
static StaticSemaphore_t sem_bufs[CT_MAX_SEMS];
static QueueHandle_t queues[CT_MAX_QUEUES];
static StaticQueue_t queue_bufs[CT_MAX_QUEUES];
static ct_msg queue_pool[CT_FREERTOS_QUEUE_POOL_MSGS];
static unsigned queue_used;
static BaseType_t isr_woken;
static uint8_t start_suspended[CT_MAX_TASKS]; /* ct_task_suspend before the scheduler starts */

#if CT_TRACE
void ct_sv_start(void);
#endif

const char *ct_port_name(void) { return "freertos"; }
const char *ct_port_version(void) { return tskKERNEL_VERSION_NUMBER; }

static UBaseType_t native_prio(int prio)
{
    return (UBaseType_t)(configMAX_PRIORITIES - prio);
}

static TickType_t native_timeout(uint32_t t)
{
    return t == CT_WAIT_FOREVER ? portMAX_DELAY : (TickType_t)t;
}

void ct_port_start(void (*app_init)(void))
{
#if CT_TRACE
    ct_sv_start();
#endif
    app_init();
    for (int id = 0; id < CT_MAX_TASKS; ++id)
        if (start_suspended[id]) vTaskSuspend(tasks[id]);
    vTaskStartScheduler(); /* returns only if the idle task could not be created */
}

ct_status ct_task_create(int id, const char *name, int prio, ct_task_fn fn, void *arg, unsigned stack_words)
{
    if (id < 0 || id >= CT_MAX_TASKS || tasks[id] != NULL || fn == NULL || prio < CT_PRIO_HIGHEST ||
        prio > CT_PRIO_LOWEST)
        return CT_ERR;
    if (stack_words == 0u) stack_words = configMINIMAL_STACK_SIZE * 2u;
    if (stack_words > CT_FREERTOS_STACK_POOL_WORDS - stack_used) return CT_ERR; /* pool exhausted */
    tasks[id] = xTaskCreateStatic(fn, name, stack_words, arg, native_prio(prio), &stack_pool[stack_used],
                                  &task_tcbs[id]);
    if (tasks[id] == NULL) return CT_ERR;
    stack_used += stack_words;
    return CT_OK;
}

ct_status ct_task_yield(void)
{
    taskYIELD();
    return CT_OK;
}

ct_status ct_task_sleep(uint32_t ticks)
{
    vTaskDelay((TickType_t)ticks);
    return CT_OK;
}

ct_status ct_task_delay_until(uint32_t *wake, uint32_t period_ticks)
{
    TickType_t w = (TickType_t)*wake;
    BaseType_t delayed = xTaskDelayUntil(&w, (TickType_t)period_ticks);
    *wake = (uint32_t)w;
    (void)delayed; /* pdFALSE = the wake time had already passed: not an error, the app sees the period */
    return CT_OK;
}

uint32_t ct_tick_now(void) { return (uint32_t)xTaskGetTickCount(); }

ct_status ct_sem_create(int id, unsigned initial)
{
    if (id < 0 || id >= CT_MAX_SEMS || sems[id] != NULL) return CT_ERR;
    sems[id] = xSemaphoreCreateCountingStatic(0xFFFFu, initial, &sem_bufs[id]);
    return sems[id] != NULL ? CT_OK : CT_ERR;
}

ct_status ct_sem_take(int id, uint32_t timeout)
{
    if (id < 0 || id >= CT_MAX_SEMS || sems[id] == NULL) return CT_ERR;
    return xSemaphoreTake(sems[id], native_timeout(timeout)) == pdTRUE ? CT_OK : CT_ERR_TIMEOUT;
}

ct_status ct_sem_give(int id)
{
    if (id < 0 || id >= CT_MAX_SEMS || sems[id] == NULL) return CT_ERR;
    return xSemaphoreGive(sems[id]) == pdTRUE ? CT_OK : CT_ERR;
}

ct_status ct_sem_give_from_isr(int id)
{
    BaseType_t woken = pdFALSE;
    if (id < 0 || id >= CT_MAX_SEMS || sems[id] == NULL) return CT_ERR;
    if (xSemaphoreGiveFromISR(sems[id], &woken) != pdTRUE) return CT_ERR;
    isr_woken |= woken;
    return CT_OK;
}

ct_status ct_queue_create(int id, unsigned depth)
{
    if (id < 0 || id >= CT_MAX_QUEUES || queues[id] != NULL || depth == 0u ||
        depth > CT_FREERTOS_QUEUE_POOL_MSGS - queue_used)
        return CT_ERR;
    queues[id] = xQueueCreateStatic(depth, sizeof(ct_msg), (uint8_t *)&queue_pool[queue_used], &queue_bufs[id]);
    if (queues[id] == NULL) return CT_ERR;
    queue_used += depth;
    return CT_OK;
}

ct_status ct_queue_send(int id, const ct_msg *msg, uint32_t timeout)
{
    if (id < 0 || id >= CT_MAX_QUEUES || queues[id] == NULL) return CT_ERR;
    return xQueueSend(queues[id], msg, native_timeout(timeout)) == pdTRUE ? CT_OK : CT_ERR_TIMEOUT;
}

ct_status ct_queue_send_from_isr(int id, const ct_msg *msg)
{
    BaseType_t woken = pdFALSE;
    if (id < 0 || id >= CT_MAX_QUEUES || queues[id] == NULL) return CT_ERR;
    if (xQueueSendFromISR(queues[id], msg, &woken) != pdTRUE) return CT_ERR;
    isr_woken |= woken;
    return CT_OK;
}

ct_status ct_queue_receive(int id, ct_msg *msg, uint32_t timeout)
{
    if (id < 0 || id >= CT_MAX_QUEUES || queues[id] == NULL) return CT_ERR;
    return xQueueReceive(queues[id], msg, native_timeout(timeout)) == pdTRUE ? CT_OK : CT_ERR_TIMEOUT;
}

/* ---- Thread-Metric additions: suspend/resume, running task, block pools (heap_4) ------------------- */

static inline int in_isr(void)
{
    uint32_t ipsr;
    __asm volatile("mrs %0, ipsr" : "=r"(ipsr));
    return (ipsr & 0x1FFu) != 0u;
}

/* In app_init (scheduler not started) suspend/resume only mark the task; ct_port_start suspends the marked
 * ones before starting the scheduler. (vTaskResume before the start would pend PendSV, still at priority 0,
 * and take it; and the first task to run is pxCurrentTCB, which only vTaskSuspend of the current task
 * re-selects: done in creation order, the highest-priority ready task runs first, as it must.) */
ct_status ct_task_suspend(int id)
{
    if (id < 0 || id >= CT_MAX_TASKS || tasks[id] == NULL) return CT_ERR;
    if (xTaskGetSchedulerState() == taskSCHEDULER_NOT_STARTED)
        start_suspended[id] = 1u;
    else
        vTaskSuspend(tasks[id]);
    return CT_OK;
}

ct_status ct_task_resume(int id)
{
    if (id < 0 || id >= CT_MAX_TASKS || tasks[id] == NULL) return CT_ERR;
    if (xTaskGetSchedulerState() == taskSCHEDULER_NOT_STARTED)
        start_suspended[id] = 0u;
    else if (in_isr())
        isr_woken |= xTaskResumeFromISR(tasks[id]);
    else
        vTaskResume(tasks[id]);
    return CT_OK;
}

/* The TCB of task id is task_tcbs[id] (xTaskCreateStatic), so the running task's id is an offset. */
int ct_task_self(void)
{
    const StaticTask_t *cur = (const StaticTask_t *)(void *)xTaskGetCurrentTaskHandle();
    if (cur < &task_tcbs[0] || cur >= &task_tcbs[CT_MAX_TASKS]) return -1;
    return (int)(cur - &task_tcbs[0]);
}

static unsigned pool_block[CT_MAX_POOLS];

ct_status ct_pool_create(int id, unsigned block_bytes, unsigned nblocks)
{
    if (id < 0 || id >= CT_MAX_POOLS || pool_block[id] != 0u || block_bytes == 0u || nblocks == 0u)
        return CT_ERR;
    pool_block[id] = block_bytes; /* FreeRTOS has no block pool: blocks come from heap_4 */
    return CT_OK;
}

ct_status ct_pool_alloc(int id, void **block)
{
    if (id < 0 || id >= CT_MAX_POOLS || pool_block[id] == 0u) return CT_ERR;
    *block = pvPortMalloc(pool_block[id]);
    return *block != NULL ? CT_OK : CT_ERR;
}

ct_status ct_pool_free(int id, void *block)
{
    if (id < 0 || id >= CT_MAX_POOLS || pool_block[id] == 0u || block == NULL) return CT_ERR;
    vPortFree(block);
    return CT_OK;
}

void ct_port_isr_enter(void)
{
    isr_woken = pdFALSE;
    traceISR_ENTER();
}

void ct_port_isr_exit(void)
{
    BaseType_t w = isr_woken;
    isr_woken = pdFALSE;
    portYIELD_FROM_ISR(w); /* emits traceISR_EXIT_TO_SCHEDULER or traceISR_EXIT exactly once */
}

#if !CT_TRACE
void ct_port_trace_mark(unsigned site, unsigned value)
{
    (void)site;
    (void)value;
}
void ct_port_trace_poll(void) {}
void ct_port_trace_finish(ct_trace_stats *stats)
{
    stats->events = stats->bytes = stats->dropped = 0u;
    stats->file = "";
}
#endif

/* Idle: drain the trace buffer to the sink. Never WFI (QEMU time rule). */
void vApplicationIdleHook(void)
{
    ct_port_trace_poll();
}

/* Kernel failures end the run with the failure sentinel instead of hanging. */
void ct_check_failed(const char *metric, const char *call, ct_status st, const char *file, int line)
    __attribute__((noreturn));

void ct_freertos_assert(const char *file, int line)
{
    ct_check_failed("port.freertos", "configASSERT", CT_ERR, file, line);
}

void vApplicationMallocFailedHook(void)
{
    ct_check_failed("port.freertos", "pvPortMalloc", CT_ERR, __FILE__, __LINE__);
}

void vApplicationStackOverflowHook(TaskHandle_t task, char *name)
{
    (void)task;
    ct_check_failed("port.freertos", name, CT_ERR, "stack overflow", 0);
}
