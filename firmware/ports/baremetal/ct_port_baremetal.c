/* ct_port_baremetal.c — the porting layer without an RTOS: the reference point for "what the RTOS costs".
 * One task (the highest priority one created) runs as the main loop; SysTick gives the 1 kHz tick;
 * semaphores are counters and queues are rings that ISRs fill and the main loop polls. A second task, a
 * yield or any object beyond the static arrays returns an explicit error. No third-party code. */
#include <string.h>

#include "ct_board.h"
#include "ct_port.h"

#define SYST_CSR CT_REG(0xE000E010u)
#define SYST_RVR CT_REG(0xE000E014u)
#define SYST_CVR CT_REG(0xE000E018u)
#define SHPR3    CT_REG(0xE000ED20u)
#define BM_QUEUE_DEPTH 16u

static volatile uint32_t ticks;
static struct {
    ct_task_fn fn;
    void *arg;
    int prio;
    int used;
} task;
static struct {
    volatile uint32_t count;
    int used;
} sems[CT_MAX_SEMS];
static struct {
    ct_msg buf[BM_QUEUE_DEPTH];
    volatile uint32_t head, tail; /* head: next write, tail: next read; full when head - tail == depth */
    uint32_t depth;
    int used;
} queues[CT_MAX_QUEUES];

void SysTick_Handler(void)
{
    ticks++;
}

const char *ct_port_name(void) { return "baremetal"; }
const char *ct_port_version(void) { return "none"; }

void ct_port_start(void (*app_init)(void))
{
    SYST_RVR = CT_BOARD_CPU_HZ / CT_TICK_HZ - 1u;
    SYST_CVR = 0u;
    SHPR3 = (SHPR3 & 0x00FFFFFFu) | (0xF0u << 24); /* SysTick lowest priority */
    SYST_CSR = 7u;                                 /* processor clock, interrupt, enable */
    app_init();
    if (task.used) task.fn(task.arg);
    /* the task returned or none was created: nothing left to run */
}

ct_status ct_task_create(int id, const char *name, int prio, ct_task_fn fn, void *arg, unsigned stack_words)
{
    (void)name;
    (void)stack_words;
    if (id < 0 || id >= CT_MAX_TASKS || fn == 0 || prio < CT_PRIO_HIGHEST || prio > CT_PRIO_LOWEST)
        return CT_ERR;
    if (task.used) return CT_ERR_UNIMPLEMENTED; /* one main loop only */
    task.fn = fn;
    task.arg = arg;
    task.prio = prio;
    task.used = 1;
    return CT_OK;
}

ct_status ct_task_yield(void) { return CT_ERR_UNIMPLEMENTED; }

uint32_t ct_tick_now(void) { return ticks; }

ct_status ct_task_sleep(uint32_t n)
{
    uint32_t start = ticks;
    while ((uint32_t)(ticks - start) < n) {
    }
    return CT_OK;
}

ct_status ct_task_delay_until(uint32_t *wake, uint32_t period_ticks)
{
    *wake += period_ticks;
    while ((int32_t)(ticks - *wake) < 0) {
    }
    return CT_OK;
}

static int wait_until(volatile uint32_t *flag_or_zero, uint32_t timeout)
{
    uint32_t start = ticks;
    while (*flag_or_zero == 0u) {
        if (timeout != CT_WAIT_FOREVER && (uint32_t)(ticks - start) >= timeout) return 0;
    }
    return 1;
}

ct_status ct_sem_create(int id, unsigned initial)
{
    if (id < 0 || id >= CT_MAX_SEMS || sems[id].used) return CT_ERR;
    sems[id].count = initial;
    sems[id].used = 1;
    return CT_OK;
}

ct_status ct_sem_take(int id, uint32_t timeout)
{
    if (id < 0 || id >= CT_MAX_SEMS || !sems[id].used) return CT_ERR;
    if (!wait_until(&sems[id].count, timeout)) return CT_ERR_TIMEOUT;
    uint32_t st = ct_irq_save();
    sems[id].count--;
    ct_irq_restore(st);
    return CT_OK;
}

ct_status ct_sem_give(int id)
{
    if (id < 0 || id >= CT_MAX_SEMS || !sems[id].used) return CT_ERR;
    uint32_t st = ct_irq_save();
    sems[id].count++;
    ct_irq_restore(st);
    return CT_OK;
}

ct_status ct_sem_give_from_isr(int id)
{
    if (id < 0 || id >= CT_MAX_SEMS || !sems[id].used) return CT_ERR;
    sems[id].count++;
    return CT_OK;
}

ct_status ct_queue_create(int id, unsigned depth)
{
    if (id < 0 || id >= CT_MAX_QUEUES || queues[id].used || depth == 0u || depth > BM_QUEUE_DEPTH) return CT_ERR;
    queues[id].depth = depth;
    queues[id].head = queues[id].tail = 0u;
    queues[id].used = 1;
    return CT_OK;
}

static ct_status q_put(int id, const ct_msg *msg)
{
    uint32_t st = ct_irq_save();
    if (queues[id].head - queues[id].tail >= queues[id].depth) {
        ct_irq_restore(st);
        return CT_ERR;
    }
    queues[id].buf[queues[id].head % queues[id].depth] = *msg;
    queues[id].head++;
    ct_irq_restore(st);
    return CT_OK;
}

ct_status ct_queue_send(int id, const ct_msg *msg, uint32_t timeout)
{
    if (id < 0 || id >= CT_MAX_QUEUES || !queues[id].used) return CT_ERR;
    uint32_t start = ticks;
    while (q_put(id, msg) != CT_OK) {
        if (timeout != CT_WAIT_FOREVER && (uint32_t)(ticks - start) >= timeout) return CT_ERR_TIMEOUT;
    }
    return CT_OK;
}

ct_status ct_queue_send_from_isr(int id, const ct_msg *msg)
{
    if (id < 0 || id >= CT_MAX_QUEUES || !queues[id].used) return CT_ERR;
    return q_put(id, msg);
}

ct_status ct_queue_receive(int id, ct_msg *msg, uint32_t timeout)
{
    if (id < 0 || id >= CT_MAX_QUEUES || !queues[id].used) return CT_ERR;
    uint32_t start = ticks;
    for (;;) {
        uint32_t st = ct_irq_save();
        if (queues[id].head != queues[id].tail) {
            *msg = queues[id].buf[queues[id].tail % queues[id].depth];
            queues[id].tail++;
            ct_irq_restore(st);
            return CT_OK;
        }
        ct_irq_restore(st);
        if (timeout != CT_WAIT_FOREVER && (uint32_t)(ticks - start) >= timeout) return CT_ERR_TIMEOUT;
    }
}

/* No tasks to suspend and no pools (Thread-Metric needs an RTOS). */
ct_status ct_task_suspend(int id) { (void)id; return CT_ERR_UNIMPLEMENTED; }
ct_status ct_task_resume(int id) { (void)id; return CT_ERR_UNIMPLEMENTED; }
int ct_task_self(void) { return -1; }
ct_status ct_pool_create(int id, unsigned block_bytes, unsigned nblocks)
{
    (void)id;
    (void)block_bytes;
    (void)nblocks;
    return CT_ERR_UNIMPLEMENTED;
}
ct_status ct_pool_alloc(int id, void **block) { (void)id; (void)block; return CT_ERR_UNIMPLEMENTED; }
ct_status ct_pool_free(int id, void *block) { (void)id; (void)block; return CT_ERR_UNIMPLEMENTED; }

void ct_port_isr_enter(void) {}
void ct_port_isr_exit(void) {}

/* No recorder: with CT_TRACE=1 a bare-metal image reports an empty trace rather than pretending. */
void ct_port_trace_mark(unsigned site, unsigned value)
{
    (void)site;
    (void)value;
}
void ct_port_trace_poll(void) {}
void ct_port_trace_finish(ct_trace_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    stats->file = "";
}
