/* ct_port_ucos3.c — the porting layer on µC/OS-III (v3.08.02, ARMv7-M GNU port): objects in static arrays
 * indexed by ct ids, task stacks carved from one static pool; ct priority p -> native p (0 highest; the
 * timer task at 5, idle at OS_CFG_PRIO_MAX-1); OS_ERR codes mapped to CT_* explicitly.
 *  - Yield: OSSchedRoundRobinYield (round robin on, default quantum 2^30 ticks: no time slicing).
 *  - Queues carry pointers in µC/OS-III: a ct_msg is copied into a block of the queue's own OSMem partition
 *    (OSMemGet/OSQPost, both ISR-safe); the receiver copies it out and returns the block. A send to a full
 *    queue with a timeout polls once per tick.
 *  - Suspend/resume: OSTaskResume is refused in an ISR (OS_ERR_TASK_RESUME_ISR). A task that suspends
 *    itself therefore waits on its own task semaphore (OSTaskSemPend), and ct_task_resume posts it with
 *    OSTaskSemPost, which is ISR-safe; a task suspended by another one (OSTaskSuspend) is resumed with
 *    OSTaskResume, from task context only. Tasks suspended in app_init suspend themselves on first run.
 *  - Interrupts: the board's TIM5 wrapper brackets the handler with OSIntEnter/OSIntExit, which record
 *    ISR enter/exit (OS_TRACE_ISR_*) and switch at exit; SysTick is the port's OS_CPU_SysTickHandler.
 *  - Tracing (CT_TRACE=1): SEGGER's SystemView glue on the OS_TRACE_* hooks + firmware/ucos/ct_sysview_ucos.c. */
#include "os.h"

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
#define CT_UCOS_POOL_BYTES 2048u        /* per pool, as Thread-Metric's 2048-byte pool */
#define CT_UCOS_RR_QUANTUM (1u << 30)   /* round robin only on yield: a quantum that never expires */

static struct {
    OS_TCB tcb;
    uint8_t used, start_suspended;
    ct_task_fn fn;
    void *arg;
} tasks[CT_MAX_TASKS];
static CPU_STK stack_pool[CT_UCOS_STACK_POOL_WORDS] __attribute__((aligned(8)));
static unsigned stack_used;

static struct {
    OS_SEM sem;
    int used;
} sems[CT_MAX_SEMS];

static struct {
    OS_Q q;
    OS_MEM mem;
    ct_msg blocks[CT_UCOS_QUEUE_DEPTH_MAX + 1u]; /* + 1: OSMemCreate needs >= 2 blocks */
    int used;
} queues[CT_MAX_QUEUES];

static struct {
    OS_MEM mem;
    uint32_t storage[CT_UCOS_POOL_BYTES / sizeof(uint32_t)];
    int used;
} pools[CT_MAX_POOLS];

static char *const sem_names[CT_MAX_SEMS] = {"sem0", "sem1", "sem2", "sem3"};
static char *const queue_names[CT_MAX_QUEUES] = {"queue0", "queue1", "queue2", "queue3"};
static char *const pool_names[CT_MAX_POOLS] = {"pool0", "pool1"};

void ct_check_failed(const char *metric, const char *call, ct_status st, const char *file, int line)
    __attribute__((noreturn));

#define CT_UCOS3_VERSION_STR "3.08.02"
_Static_assert(OS_VERSION == 30802u, "the version string below is for uC/OS-III v3.08.02");

const char *ct_port_name(void) { return "ucos3"; }
const char *ct_port_version(void) { return CT_UCOS3_VERSION_STR; }

/* A kernel call that cannot fail in a correct port: CT_FAIL port.ucos3 <call> err=<OS_ERR code>. */
#define FAIL_IF(err, call)                                                                         \
    do {                                                                                           \
        if ((err) != OS_ERR_NONE) ct_check_failed("port.ucos3", call, (ct_status)(err), __FILE__, __LINE__); \
    } while (0)

/* Idle hook (OSIdleTaskHook -> OS_AppIdleTaskHookPtr): drain the trace; never WFI (QEMU time rule). */
static void idle_hook(void)
{
    ct_port_trace_poll();
}

void ct_port_start(void (*app_init)(void))
{
    OS_ERR err;
    CPU_Init();
    OSInit(&err);
    FAIL_IF(err, "OSInit");
    OSSchedRoundRobinCfg(OS_TRUE, CT_UCOS_RR_QUANTUM, &err);
    FAIL_IF(err, "OSSchedRoundRobinCfg");
    OS_AppIdleTaskHookPtr = idle_hook;
#if CT_TRACE
    ct_sv_ucos_start();
#endif
    app_init();
    OS_CPU_SysTickInitFreq(CT_BOARD_CPU_HZ); /* CT_TICK_HZ = OS_CFG_TICK_RATE_HZ */
    OSStart(&err);                            /* returns only on error */
    FAIL_IF(err, "OSStart");
}

/* ---- tasks ---------------------------------------------------------------------------------------- */

static int task_id_of(const OS_TCB *tcb)
{
    uintptr_t off = (uintptr_t)tcb - (uintptr_t)&tasks[0];
    return off < sizeof tasks ? (int)(off / sizeof tasks[0]) : -1;
}

static ct_status self_suspend(void)
{
    OS_ERR err;
    (void)OSTaskSemPend(0u, OS_OPT_PEND_BLOCKING, (CPU_TS *)0, &err);
    return err == OS_ERR_NONE ? CT_OK : CT_ERR;
}

static void task_entry(void *p)
{
    int id = (int)(intptr_t)p;
    if (tasks[id].start_suspended && self_suspend() != CT_OK)
        ct_check_failed("port.ucos3", "OSTaskSemPend", CT_ERR, __FILE__, __LINE__);
    tasks[id].fn(tasks[id].arg);
    for (;;) ct_check_failed("port.ucos3", "task returned", CT_ERR, __FILE__, __LINE__);
}

ct_status ct_task_create(int id, const char *name, int prio, ct_task_fn fn, void *arg, unsigned stack_words)
{
    OS_ERR err;
    if (id < 0 || id >= CT_MAX_TASKS || tasks[id].used || fn == 0 || prio < CT_PRIO_HIGHEST ||
        prio > CT_PRIO_LOWEST)
        return CT_ERR;
    if (stack_words == 0u) stack_words = CT_UCOS_DEFAULT_STACK_WORDS;
    stack_words = (stack_words + 1u) & ~1u; /* keep the 8-byte stack alignment */
    if (stack_words > CT_UCOS_STACK_POOL_WORDS - stack_used) return CT_ERR;
    tasks[id].fn = fn;
    tasks[id].arg = arg;
    tasks[id].used = 1u;
    OSTaskCreate(&tasks[id].tcb, (CPU_CHAR *)(uintptr_t)name, task_entry, (void *)(intptr_t)id, (OS_PRIO)prio,
                 &stack_pool[stack_used], (CPU_STK_SIZE)(stack_words / 10u), (CPU_STK_SIZE)stack_words, 0u, 0u,
                 (void *)0, OS_OPT_TASK_STK_CLR, &err);
    if (err != OS_ERR_NONE) {
        tasks[id].used = 0u;
        return CT_ERR;
    }
    stack_used += stack_words;
    return CT_OK;
}

ct_status ct_task_yield(void)
{
    OS_ERR err;
    OSSchedRoundRobinYield(&err);
    /* OS_ERR_ROUND_ROBIN_1: no other ready task at this priority, nothing to yield to (as taskYIELD) */
    return err == OS_ERR_NONE || err == OS_ERR_ROUND_ROBIN_1 ? CT_OK : CT_ERR;
}

ct_status ct_task_sleep(uint32_t ticks)
{
    OS_ERR err;
    if (ticks == 0u) return CT_OK;
    OSTimeDly((OS_TICK)ticks, OS_OPT_TIME_DLY, &err);
    return err == OS_ERR_NONE ? CT_OK : CT_ERR;
}

/* Absolute: OS_OPT_TIME_MATCH wakes when the tick counter equals the target. The kernel computes the
 * remaining ticks inside its critical section and refuses a target equal to now (OS_ERR_TIME_ZERO_DLY):
 * that, and a target already passed, return at once (FreeRTOS xTaskDelayUntil semantics). */
ct_status ct_task_delay_until(uint32_t *wake, uint32_t period_ticks)
{
    OS_ERR err;
    uint32_t target = *wake + period_ticks;
    *wake = target;
    if ((int32_t)(target - ct_tick_now()) <= 0) return CT_OK;
    OSTimeDly((OS_TICK)target, OS_OPT_TIME_MATCH, &err);
    return err == OS_ERR_NONE || err == OS_ERR_TIME_ZERO_DLY ? CT_OK : CT_ERR;
}

uint32_t ct_tick_now(void)
{
    OS_ERR err;
    return (uint32_t)OSTimeGet(&err);
}

/* ---- semaphores ----------------------------------------------------------------------------------- */

/* ct timeout -> µC/OS pend: 0 ticks = do not block; µC/OS's own 0 means forever. */
static OS_TICK pend_timeout(uint32_t t, OS_OPT *opt)
{
    *opt = t == 0u ? OS_OPT_PEND_NON_BLOCKING : OS_OPT_PEND_BLOCKING;
    return t == CT_WAIT_FOREVER ? 0u : (OS_TICK)t;
}

static ct_status pend_status(OS_ERR err)
{
    switch (err) {
    case OS_ERR_NONE: return CT_OK;
    case OS_ERR_TIMEOUT:
    case OS_ERR_PEND_WOULD_BLOCK: return CT_ERR_TIMEOUT;
    default: return CT_ERR;
    }
}

ct_status ct_sem_create(int id, unsigned initial)
{
    OS_ERR err;
    if (id < 0 || id >= CT_MAX_SEMS || sems[id].used) return CT_ERR;
    OSSemCreate(&sems[id].sem, sem_names[id], (OS_SEM_CTR)initial, &err);
    if (err != OS_ERR_NONE) return CT_ERR;
    sems[id].used = 1;
    return CT_OK;
}

ct_status ct_sem_take(int id, uint32_t timeout_ticks)
{
    OS_ERR err;
    OS_OPT opt;
    if (id < 0 || id >= CT_MAX_SEMS || !sems[id].used) return CT_ERR;
    OS_TICK t = pend_timeout(timeout_ticks, &opt);
    (void)OSSemPend(&sems[id].sem, t, opt, (CPU_TS *)0, &err);
    return pend_status(err);
}

ct_status ct_sem_give(int id)
{
    OS_ERR err;
    if (id < 0 || id >= CT_MAX_SEMS || !sems[id].used) return CT_ERR;
    (void)OSSemPost(&sems[id].sem, OS_OPT_POST_1, &err);
    return err == OS_ERR_NONE ? CT_OK : CT_ERR;
}

/* OSSemPost is ISR-safe; OSIntExit (ct_port_isr_exit) performs the switch to a woken task. */
ct_status ct_sem_give_from_isr(int id)
{
    return ct_sem_give(id);
}

/* ---- queues --------------------------------------------------------------------------------------- */

ct_status ct_queue_create(int id, unsigned depth)
{
    OS_ERR err;
    if (id < 0 || id >= CT_MAX_QUEUES || queues[id].used || depth == 0u || depth > CT_UCOS_QUEUE_DEPTH_MAX)
        return CT_ERR;
    OSMemCreate(&queues[id].mem, queue_names[id], queues[id].blocks, (OS_MEM_QTY)(depth + 1u), sizeof(ct_msg), &err);
    if (err != OS_ERR_NONE) return CT_ERR;
    OSQCreate(&queues[id].q, queue_names[id], (OS_MSG_QTY)depth, &err);
    if (err != OS_ERR_NONE) return CT_ERR;
    queues[id].used = 1;
    return CT_OK;
}

/* Copy into a free block and post it; CT_ERR_TIMEOUT when the queue is full. The partition has one block
 * more than the queue's depth (OSMemCreate refuses fewer than 2 blocks, and a depth-1 queue is what the
 * fine-grained tests D and E use), so a full queue shows as the post's error; the block goes back. */
static ct_status queue_put(int id, const ct_msg *msg)
{
    OS_ERR err;
    ct_msg *blk = (ct_msg *)OSMemGet(&queues[id].mem, &err);
    if (err != OS_ERR_NONE) return CT_ERR_TIMEOUT;
    *blk = *msg;
    OSQPost(&queues[id].q, blk, sizeof(ct_msg), OS_OPT_POST_FIFO, &err);
    if (err == OS_ERR_NONE) return CT_OK;
    OS_ERR post_err = err;
    OSMemPut(&queues[id].mem, blk, &err);
    return post_err == OS_ERR_Q_MAX ? CT_ERR_TIMEOUT : CT_ERR;
}

ct_status ct_queue_send(int id, const ct_msg *msg, uint32_t timeout_ticks)
{
    if (id < 0 || id >= CT_MAX_QUEUES || !queues[id].used) return CT_ERR;
    for (uint32_t waited = 0u;; ++waited) {
        ct_status st = queue_put(id, msg);
        if (st != CT_ERR_TIMEOUT || (timeout_ticks != CT_WAIT_FOREVER && waited >= timeout_ticks)) return st;
        if (ct_task_sleep(1u) != CT_OK) return CT_ERR;
    }
}

ct_status ct_queue_send_from_isr(int id, const ct_msg *msg)
{
    if (id < 0 || id >= CT_MAX_QUEUES || !queues[id].used) return CT_ERR;
    return queue_put(id, msg) == CT_OK ? CT_OK : CT_ERR;
}

ct_status ct_queue_receive(int id, ct_msg *msg, uint32_t timeout_ticks)
{
    OS_ERR err;
    OS_OPT opt;
    OS_MSG_SIZE size;
    if (id < 0 || id >= CT_MAX_QUEUES || !queues[id].used) return CT_ERR;
    OS_TICK t = pend_timeout(timeout_ticks, &opt);
    ct_msg *blk = (ct_msg *)OSQPend(&queues[id].q, t, opt, &size, (CPU_TS *)0, &err);
    ct_status st = pend_status(err);
    if (st != CT_OK) return st;
    *msg = *blk;
    OSMemPut(&queues[id].mem, blk, &err);
    return err == OS_ERR_NONE ? CT_OK : CT_ERR;
}

/* ---- Thread-Metric additions: suspend/resume, running task, block pools ------------------------------ */

ct_status ct_task_suspend(int id)
{
    OS_ERR err;
    if (id < 0 || id >= CT_MAX_TASKS || !tasks[id].used) return CT_ERR;
    if (OSRunning != OS_STATE_OS_RUNNING) {
        tasks[id].start_suspended = 1u; /* suspends itself when it first runs */
        return CT_OK;
    }
    if (id == ct_task_self()) return self_suspend();
    OSTaskSuspend(&tasks[id].tcb, &err);
    return err == OS_ERR_NONE ? CT_OK : CT_ERR;
}

/* From a task or an ISR: a task waiting on its task semaphore (suspended itself) is released with the
 * ISR-safe OSTaskSemPost; one suspended by another task needs OSTaskResume (task context only). */
ct_status ct_task_resume(int id)
{
    OS_ERR err;
    CPU_SR_ALLOC();
    if (id < 0 || id >= CT_MAX_TASKS || !tasks[id].used) return CT_ERR;
    if (OSRunning != OS_STATE_OS_RUNNING) {
        tasks[id].start_suspended = 0u;
        return CT_OK;
    }
    err = OS_ERR_NONE; /* not suspended: nothing to do */
    CPU_CRITICAL_ENTER(); /* the state test and the release are one step: no other resume in between */
    if (tasks[id].tcb.PendOn == OS_TASK_PEND_ON_TASK_SEM)
        (void)OSTaskSemPost(&tasks[id].tcb, OS_OPT_POST_NONE, &err); /* a switch waits for the exit */
    else if (tasks[id].tcb.TaskState & OS_TASK_STATE_SUSPENDED)
        OSTaskResume(&tasks[id].tcb, &err);
    CPU_CRITICAL_EXIT();
    return err == OS_ERR_NONE ? CT_OK : CT_ERR;
}

int ct_task_self(void)
{
    return task_id_of(OSTCBCurPtr);
}

ct_status ct_pool_create(int id, unsigned block_bytes, unsigned nblocks)
{
    OS_ERR err;
    if (id < 0 || id >= CT_MAX_POOLS || pools[id].used || block_bytes == 0u || nblocks == 0u) return CT_ERR;
    unsigned blk = (block_bytes + 3u) & ~3u; /* a free block holds a pointer: word-sized blocks */
    if (nblocks > sizeof pools[id].storage / blk) nblocks = sizeof pools[id].storage / blk;
    OSMemCreate(&pools[id].mem, pool_names[id], pools[id].storage, (OS_MEM_QTY)nblocks, (OS_MEM_SIZE)blk, &err);
    if (err != OS_ERR_NONE) return CT_ERR;
    pools[id].used = 1;
    return CT_OK;
}

ct_status ct_pool_alloc(int id, void **block)
{
    OS_ERR err;
    if (id < 0 || id >= CT_MAX_POOLS || !pools[id].used) return CT_ERR;
    *block = OSMemGet(&pools[id].mem, &err);
    return err == OS_ERR_NONE ? CT_OK : CT_ERR;
}

ct_status ct_pool_free(int id, void *block)
{
    OS_ERR err;
    if (id < 0 || id >= CT_MAX_POOLS || !pools[id].used || block == 0) return CT_ERR;
    OSMemPut(&pools[id].mem, block, &err);
    return err == OS_ERR_NONE ? CT_OK : CT_ERR;
}

/* ---- interrupts ----------------------------------------------------------------------------------- */

/* The kernel's ISR protocol: the nesting counter is incremented under a critical section (SysTick, at a
 * higher priority, may preempt TIM5), the switch happens in OSIntExit. Both record the ISR in the trace. */
void ct_port_isr_enter(void)
{
    CPU_SR_ALLOC();
    CPU_CRITICAL_ENTER();
    OSIntEnter();
    CPU_CRITICAL_EXIT();
}

void ct_port_isr_exit(void)
{
    OSIntExit();
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
