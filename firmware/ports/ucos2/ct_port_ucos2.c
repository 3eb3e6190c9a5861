/* ct_port_ucos2.c — the porting layer on µC/OS-II (v2.93.01, ARMv7-M GNU port): kernel objects behind ct ids
 * in static arrays, task stacks carved from one static pool; OS error codes mapped to CT_* explicitly.
 *  - Priorities: µC/OS-II has exactly one task per priority and no round robin. ct priority p -> native
 *    p + 5 (the timer task keeps 5, idle 63); a second task at the same ct priority is refused (CT_ERR), so
 *    ctx_switch (equal-priority tasks yielding) cannot run (port.cmake: CT_PORT_APPS), and ct_task_yield has
 *    no peer to yield to (CT_OK, as µC/OS-III's OS_ERR_ROUND_ROBIN_1).
 *  - Queues carry pointers: a ct_msg is copied into a block of the queue's own OSMem partition (OSMemGet +
 *    OSQPost, both ISR-safe), the receiver copies it out and returns the block; a task's send to a full
 *    queue with a timeout polls once per tick. Timeout 0 = the Accept calls (µC/OS's own 0 means forever).
 *  - No absolute delay: ct_task_delay_until reads the tick and arms OSTimeDly(target - now) inside one
 *    critical section, so the tick cannot move in between; the switch happens when it ends.
 *  - Suspend/resume: OSTaskSuspend/OSTaskResume; µC/OS-II allows OSTaskResume in an ISR (OSIntExit switches).
 *  - Interrupts: OSIntEnter/OSIntExit around the board's TIM5 handler (they record ISR enter/exit).
 *  - Tracing (CT_TRACE=1): SEGGER's SystemView glue on the OS_TRACE_* hooks + firmware/ucos/ct_sysview_ucos.c. */
#include "ucos_ii.h"

#include "ct_board.h"
#include "ct_port.h"
#if CT_TRACE
#include "ct_sysview_ucos.h"
#endif

#ifndef CT_UCOS_STACK_POOL_WORDS
#define CT_UCOS_STACK_POOL_WORDS 8192u /* 32 KB for all task stacks */
#endif
#define CT_UCOS_DEFAULT_STACK_WORDS 512u
#define CT_UCOS_QUEUE_DEPTH_MAX 16u
#define CT_UCOS_POOL_BYTES 2048u /* per pool, as Thread-Metric's 2048-byte pool */
#define CT_UCOS2_PRIO_OFFSET 5u  /* ct priority p -> native p + 5: the timer task (5) above every ct task */

static struct {
    uint8_t used, prio; /* prio: native */
    ct_task_fn fn;
    void *arg;
} tasks[CT_MAX_TASKS];
static int8_t task_of_prio[OS_LOWEST_PRIO + 1u]; /* native priority -> ct id + 1 (0: none) */
static OS_STK stack_pool[CT_UCOS_STACK_POOL_WORDS] __attribute__((aligned(8)));
static unsigned stack_used;
static OS_EVENT *sems[CT_MAX_SEMS];

static struct {
    OS_EVENT *q;
    OS_MEM *mem;
    void *slots[CT_UCOS_QUEUE_DEPTH_MAX];
    ct_msg blocks[CT_UCOS_QUEUE_DEPTH_MAX + 1u]; /* + 1: OSMemCreate needs >= 2 blocks */
} queues[CT_MAX_QUEUES];

static struct {
    OS_MEM *mem;
    uint32_t storage[CT_UCOS_POOL_BYTES / sizeof(uint32_t)];
} pools[CT_MAX_POOLS];

void ct_check_failed(const char *metric, const char *call, ct_status st, const char *file, int line)
    __attribute__((noreturn));

_Static_assert(OS_VERSION == 29300u, "uC/OS-II v2.93.01 still reads 29300: the version string below");

const char *ct_port_name(void) { return "ucos2"; }
const char *ct_port_version(void) { return "2.93.01"; }

static INT8U prio_of(int id) { return (INT8U)(tasks[id].prio); }

/* App hooks (OS_APP_HOOKS_EN: os_cpu_c.c calls them). The idle hook drains the trace; never WFI (QEMU). */
void App_TaskIdleHook(void) { ct_port_trace_poll(); }
void App_TaskCreateHook(OS_TCB *ptcb) { (void)ptcb; }
void App_TaskDelHook(OS_TCB *ptcb) { (void)ptcb; }
void App_TaskReturnHook(OS_TCB *ptcb) { (void)ptcb; }
void App_TaskStatHook(void) {}
void App_TaskSwHook(void) {}
void App_TCBInitHook(OS_TCB *ptcb) { (void)ptcb; }
void App_TimeTickHook(void) {}

void ct_port_start(void (*app_init)(void))
{
    OSInit();
#if CT_TRACE
    ct_sv_ucos_start();
#endif
    app_init();
    OS_CPU_SysTickInitFreq(CT_BOARD_CPU_HZ); /* CT_TICK_HZ = OS_TICKS_PER_SEC */
    OSStart();                                /* never returns */
}

/* ---- tasks ---------------------------------------------------------------------------------------- */

static void task_entry(void *p)
{
    int id = (int)(intptr_t)p;
    tasks[id].fn(tasks[id].arg);
    for (;;) ct_check_failed("port.ucos2", "task returned", CT_ERR, __FILE__, __LINE__);
}

ct_status ct_task_create(int id, const char *name, int prio, ct_task_fn fn, void *arg, unsigned stack_words)
{
    INT8U err;
    if (id < 0 || id >= CT_MAX_TASKS || tasks[id].used || fn == 0 || prio < CT_PRIO_HIGHEST ||
        prio > CT_PRIO_LOWEST)
        return CT_ERR;
    INT8U np = (INT8U)(prio + CT_UCOS2_PRIO_OFFSET);
    if (task_of_prio[np] != 0) return CT_ERR; /* one task per priority */
    if (stack_words == 0u) stack_words = CT_UCOS_DEFAULT_STACK_WORDS;
    stack_words = (stack_words + 1u) & ~1u; /* keep the 8-byte stack alignment */
    if (stack_words > CT_UCOS_STACK_POOL_WORDS - stack_used) return CT_ERR;
    OS_STK *bottom = &stack_pool[stack_used];
    tasks[id].fn = fn;
    tasks[id].arg = arg;
    tasks[id].prio = np;
    tasks[id].used = 1u;
    err = OSTaskCreateExt(task_entry, (void *)(intptr_t)id, &bottom[stack_words - 1u], np, (INT16U)id, bottom,
                          (INT32U)stack_words, (void *)0, OS_TASK_OPT_STK_CHK | OS_TASK_OPT_STK_CLR);
    if (err != OS_ERR_NONE) {
        tasks[id].used = 0u;
        return CT_ERR;
    }
    task_of_prio[np] = (int8_t)(id + 1);
    stack_used += stack_words;
    OSTaskNameSet(np, (INT8U *)(uintptr_t)name, &err); /* the trace's task name (OS_TRACE_TASK_NAME_SET) */
    return err == OS_ERR_NONE ? CT_OK : CT_ERR;
}

ct_status ct_task_yield(void) { return CT_OK; } /* no other task can share this priority */

ct_status ct_task_sleep(uint32_t ticks)
{
    OSTimeDly((INT32U)ticks);
    return CT_OK;
}

ct_status ct_task_delay_until(uint32_t *wake, uint32_t period_ticks)
{
    OS_CPU_SR cpu_sr = 0u;
    uint32_t target = *wake + period_ticks;
    *wake = target;
    OS_ENTER_CRITICAL();
    int32_t left = (int32_t)(target - (uint32_t)OSTime);
    if (left > 0) OSTimeDly((INT32U)left); /* blocks when the critical section ends (PendSV) */
    OS_EXIT_CRITICAL();
    return CT_OK;
}

uint32_t ct_tick_now(void) { return (uint32_t)OSTimeGet(); }

/* ---- semaphores ----------------------------------------------------------------------------------- */

static ct_status pend_status(INT8U err)
{
    switch (err) {
    case OS_ERR_NONE: return CT_OK;
    case OS_ERR_TIMEOUT: return CT_ERR_TIMEOUT;
    default: return CT_ERR;
    }
}

/* ct ticks -> µC/OS-II pend timeout (0 = forever there); 0 ticks is handled by the Accept calls. */
static INT32U pend_ticks(uint32_t t) { return t == CT_WAIT_FOREVER ? 0u : (INT32U)t; }

ct_status ct_sem_create(int id, unsigned initial)
{
    if (id < 0 || id >= CT_MAX_SEMS || sems[id] != 0 || initial > 0xFFFFu) return CT_ERR;
    sems[id] = OSSemCreate((INT16U)initial);
    return sems[id] != 0 ? CT_OK : CT_ERR;
}

ct_status ct_sem_take(int id, uint32_t timeout_ticks)
{
    INT8U err;
    if (id < 0 || id >= CT_MAX_SEMS || sems[id] == 0) return CT_ERR;
    if (timeout_ticks == 0u) return OSSemAccept(sems[id]) > 0u ? CT_OK : CT_ERR_TIMEOUT;
    OSSemPend(sems[id], pend_ticks(timeout_ticks), &err);
    return pend_status(err);
}

ct_status ct_sem_give(int id)
{
    if (id < 0 || id >= CT_MAX_SEMS || sems[id] == 0) return CT_ERR;
    return OSSemPost(sems[id]) == OS_ERR_NONE ? CT_OK : CT_ERR;
}

/* OSSemPost is ISR-safe; OSIntExit (ct_port_isr_exit) performs the switch to a woken task. */
ct_status ct_sem_give_from_isr(int id) { return ct_sem_give(id); }

/* ---- queues --------------------------------------------------------------------------------------- */

ct_status ct_queue_create(int id, unsigned depth)
{
    INT8U err;
    if (id < 0 || id >= CT_MAX_QUEUES || queues[id].q != 0 || depth == 0u || depth > CT_UCOS_QUEUE_DEPTH_MAX)
        return CT_ERR;
    queues[id].mem = OSMemCreate(queues[id].blocks, (INT32U)(depth + 1u), sizeof(ct_msg), &err);
    if (err != OS_ERR_NONE) return CT_ERR;
    queues[id].q = OSQCreate(queues[id].slots, (INT16U)depth);
    return queues[id].q != 0 ? CT_OK : CT_ERR;
}

/* Copy into a free block and post it; CT_ERR_TIMEOUT when the queue is full. The partition has one block
 * more than the queue's depth (OSMemCreate refuses fewer than 2 blocks, and a depth-1 queue is what the
 * fine-grained tests D and E use), so a full queue shows as the post's error; the block goes back. */
static ct_status queue_put(int id, const ct_msg *msg)
{
    INT8U err;
    ct_msg *blk = (ct_msg *)OSMemGet(queues[id].mem, &err);
    if (err != OS_ERR_NONE) return CT_ERR_TIMEOUT;
    *blk = *msg;
    INT8U post_err = OSQPost(queues[id].q, blk);
    if (post_err == OS_ERR_NONE) return CT_OK;
    (void)OSMemPut(queues[id].mem, blk);
    return post_err == OS_ERR_Q_FULL ? CT_ERR_TIMEOUT : CT_ERR;
}

ct_status ct_queue_send(int id, const ct_msg *msg, uint32_t timeout_ticks)
{
    if (id < 0 || id >= CT_MAX_QUEUES || queues[id].q == 0) return CT_ERR;
    for (uint32_t waited = 0u;; ++waited) {
        ct_status st = queue_put(id, msg);
        if (st != CT_ERR_TIMEOUT || (timeout_ticks != CT_WAIT_FOREVER && waited >= timeout_ticks)) return st;
        OSTimeDly(1u);
    }
}

ct_status ct_queue_send_from_isr(int id, const ct_msg *msg)
{
    if (id < 0 || id >= CT_MAX_QUEUES || queues[id].q == 0) return CT_ERR;
    return queue_put(id, msg) == CT_OK ? CT_OK : CT_ERR;
}

ct_status ct_queue_receive(int id, ct_msg *msg, uint32_t timeout_ticks)
{
    INT8U err;
    ct_msg *blk;
    if (id < 0 || id >= CT_MAX_QUEUES || queues[id].q == 0) return CT_ERR;
    if (timeout_ticks == 0u) {
        blk = (ct_msg *)OSQAccept(queues[id].q, &err);
        if (err == OS_ERR_Q_EMPTY) return CT_ERR_TIMEOUT;
    } else {
        blk = (ct_msg *)OSQPend(queues[id].q, pend_ticks(timeout_ticks), &err);
    }
    ct_status st = pend_status(err);
    if (st != CT_OK) return st;
    *msg = *blk;
    return OSMemPut(queues[id].mem, blk) == OS_ERR_NONE ? CT_OK : CT_ERR;
}

/* ---- Thread-Metric additions: suspend/resume, running task, block pools ------------------------------ */

ct_status ct_task_suspend(int id)
{
    if (id < 0 || id >= CT_MAX_TASKS || !tasks[id].used) return CT_ERR;
    return OSTaskSuspend(prio_of(id)) == OS_ERR_NONE ? CT_OK : CT_ERR;
}

/* ISR-safe in µC/OS-II: the switch to a resumed higher-priority task happens in OSIntExit. */
ct_status ct_task_resume(int id)
{
    if (id < 0 || id >= CT_MAX_TASKS || !tasks[id].used) return CT_ERR;
    INT8U err = OSTaskResume(prio_of(id));
    return err == OS_ERR_NONE || err == OS_ERR_TASK_NOT_SUSPENDED ? CT_OK : CT_ERR;
}

int ct_task_self(void)
{
    if (OSTCBCur == (OS_TCB *)0) return -1;
    return task_of_prio[OSTCBCur->OSTCBPrio] - 1;
}

ct_status ct_pool_create(int id, unsigned block_bytes, unsigned nblocks)
{
    INT8U err;
    if (id < 0 || id >= CT_MAX_POOLS || pools[id].mem != 0 || block_bytes == 0u || nblocks == 0u) return CT_ERR;
    unsigned blk = (block_bytes + 3u) & ~3u; /* a free block holds a pointer: word-sized blocks */
    if (nblocks > sizeof pools[id].storage / blk) nblocks = sizeof pools[id].storage / blk;
    pools[id].mem = OSMemCreate(pools[id].storage, (INT32U)nblocks, (INT32U)blk, &err);
    return err == OS_ERR_NONE ? CT_OK : CT_ERR;
}

ct_status ct_pool_alloc(int id, void **block)
{
    INT8U err;
    if (id < 0 || id >= CT_MAX_POOLS || pools[id].mem == 0) return CT_ERR;
    *block = OSMemGet(pools[id].mem, &err);
    return err == OS_ERR_NONE ? CT_OK : CT_ERR;
}

ct_status ct_pool_free(int id, void *block)
{
    if (id < 0 || id >= CT_MAX_POOLS || pools[id].mem == 0 || block == 0) return CT_ERR;
    return OSMemPut(pools[id].mem, block) == OS_ERR_NONE ? CT_OK : CT_ERR;
}

/* ---- interrupts ----------------------------------------------------------------------------------- */

/* The kernel's ISR protocol: OSIntEnter under a critical section (SysTick, at a higher priority, may
 * preempt TIM5), the switch in OSIntExit. Both record the ISR in the trace. */
void ct_port_isr_enter(void)
{
    OS_CPU_SR cpu_sr = 0u;
    OS_ENTER_CRITICAL();
    OSIntEnter();
    OS_EXIT_CRITICAL();
}

void ct_port_isr_exit(void) { OSIntExit(); }

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
