/* ct_port_riot.c — the porting layer on RIOT: ids index static arrays of RIOT threads (stacks here), sema_t,
 * and queues built from a ring and two semaphores; native status is mapped to CT_* explicitly.
 * Kernel tick: RIOT is tickless (ztimer on a hardware timer), and QEMU's STM32 timers raise no compare
 * interrupts, so this port drives one ztimer clock of its own from SysTick at 1 kHz on both boards: every
 * delay, period and timeout is in 1 ms ticks, as on the other ports. ct priority p (1..31) = RIOT priority
 * p-1 (SCHED_PRIO_LEVELS=32); there is no idle thread: the main thread, after app_init(), drops to priority
 * 31 and drains the trace forever (never WFI). Tracing: sched_cb -> sysview/ct_trace_riot.c. */
#include <errno.h>
#include <string.h>

#include "cpu.h"
#include "irq.h"
#include "sched.h"
#include "sema.h"
#include "thread.h"
#include "ztimer.h"

#include "ct_port.h"
#include "ct_port_riot.h"

#ifndef CT_RIOT_STACK_BYTES
#define CT_RIOT_STACK_BYTES 2560u /* per task: the largest app request (512 words) + thread_t + FP context */
#endif
#define CT_RIOT_QUEUE_POOL_MSGS 64u
#define CT_RIOT_POOL_BYTES 8192u
#define CT_RIOT_DRAIN_PRIO (SCHED_PRIO_LEVELS - 1)

_Static_assert(SCHED_PRIO_LEVELS == 32, "ct priorities 1..31 need RIOT priorities 0..30 + the drain at 31");

static char stacks[CT_MAX_TASKS][CT_RIOT_STACK_BYTES] __attribute__((aligned(8)));
static kernel_pid_t task_pid[CT_MAX_TASKS];
static ct_task_fn task_fn[CT_MAX_TASKS];
static void *task_arg[CT_MAX_TASKS];
static uint8_t task_used[CT_MAX_TASKS], task_start_suspended[CT_MAX_TASKS];
static sema_t sems[CT_MAX_SEMS];
static uint8_t sem_used[CT_MAX_SEMS];

static struct {
    sema_t used, free;
    ct_msg *ring;
    unsigned depth, head, tail;
} queues[CT_MAX_QUEUES];
static uint8_t queue_used[CT_MAX_QUEUES];
static ct_msg queue_pool[CT_RIOT_QUEUE_POOL_MSGS];
static unsigned queue_pool_used;

static struct {
    void *free_list;
    unsigned block_bytes;
} pools[CT_MAX_POOLS];
static uint8_t pool_used[CT_MAX_POOLS];
static uint32_t pool_arena[CT_RIOT_POOL_BYTES / 4u];
static unsigned pool_arena_used;
static int started;

const char *ct_port_name(void) { return "riot"; }
const char *ct_port_version(void) { return RIOT_VERSION; }

/* ---- the 1 kHz tick: a ztimer clock on SysTick ------------------------------------------------------ */

static volatile uint32_t tick_count, tick_target;
static volatile uint8_t tick_armed;

static void tick_set(ztimer_clock_t *clock, uint32_t val)
{
    (void)clock;
    unsigned s = irq_disable();
    tick_target = tick_count + (val ? val : 1u);
    tick_armed = 1u;
    irq_restore(s);
}

static uint32_t tick_read(ztimer_clock_t *clock)
{
    (void)clock;
    return tick_count;
}

static void tick_cancel(ztimer_clock_t *clock)
{
    (void)clock;
    tick_armed = 0u;
}

static const ztimer_ops_t tick_ops = {.set = tick_set, .now = tick_read, .cancel = tick_cancel};
static ztimer_clock_t ct_clock = {.ops = &tick_ops, .max_value = UINT32_MAX};

/* SysTick: counts ticks; only a tick that expires a ztimer is an ISR in the trace (SystemView id 15). */
void isr_systick(void)
{
    uint32_t now = tick_count + 1u;
    tick_count = now;
    if (tick_armed && (int32_t)(now - tick_target) >= 0) {
        tick_armed = 0u;
        ct_port_isr_enter();
        ztimer_handler(&ct_clock);
        ct_port_isr_exit();
    }
}

uint32_t ct_tick_now(void) { return tick_count; }

static void tick_start(void)
{
    SysTick->LOAD = ct_riot_cpu_hz() / CT_TICK_HZ - 1u;
    SysTick->VAL = 0u;
    NVIC_SetPriority(SysTick_IRQn, CPU_DEFAULT_IRQ_PRIO);
    SysTick->CTRL = SysTick_CTRL_CLKSOURCE_Msk | SysTick_CTRL_TICKINT_Msk | SysTick_CTRL_ENABLE_Msk;
}

/* Linker wrap (Makefile): RIOT's clock setup waits for RCC ready flags that QEMU never sets, so it is skipped
 * on both boards; the core stays on the reset clock until crosstrace's ct_board_init() (F429: 180 MHz). */
void __wrap_stmclk_init_sysclk(void);
void __wrap_stmclk_init_sysclk(void) {}

/* ---- start, scheduler hook, interrupts --------------------------------------------------------------- */

static void on_switch(kernel_pid_t active, kernel_pid_t next)
{
    (void)active;
    if (next == KERNEL_PID_UNDEF) return; /* the switch-out half */
    thread_t *t = thread_get(next);
    ct_riot_trace_switch((t && t->priority != CT_RIOT_DRAIN_PRIO) ? (uint32_t)(uintptr_t)t : 0u);
}

void TIM5_IRQHandler(void); /* boards/common/stm32f4_common.c: acknowledges TIM5, calls the app handler */
void isr_tim5(void) { TIM5_IRQHandler(); }

/* RIOT runs main() on its main thread: objects and tasks are created with interrupts masked before any of
 * them runs; then SysTick starts and this thread becomes the trace drain below every task. */
void ct_port_start(void (*app_init)(void))
{
    ct_riot_trace_start();
    sched_register_cb(on_switch);
    unsigned s = irq_disable();
    app_init();
    started = 1;
    tick_start();
    sched_change_priority(thread_get_active(), CT_RIOT_DRAIN_PRIO);
    irq_restore(s);
    for (;;) ct_port_trace_poll(); /* never WFI (QEMU time rule); the ct tasks preempt this at will */
}

void ct_port_isr_enter(void) { ct_riot_trace_isr_enter(); }

void ct_port_isr_exit(void)
{
    ct_riot_trace_isr_exit(sched_context_switch_request != 0u);
    cortexm_isr_end();
}

/* ---- tasks ------------------------------------------------------------------------------------------- */

static void *task_entry(void *arg)
{
    int id = (int)(intptr_t)arg;
    if (task_start_suspended[id]) thread_sleep();
    task_fn[id](task_arg[id]);
    return NULL;
}

ct_status ct_task_create(int id, const char *name, int prio, ct_task_fn fn, void *arg, unsigned stack_words)
{
    if (id < 0 || id >= CT_MAX_TASKS || task_used[id] || !fn || prio < CT_PRIO_HIGHEST || prio > CT_PRIO_LOWEST)
        return CT_ERR;
    if (stack_words * 4u + 512u > CT_RIOT_STACK_BYTES) return CT_ERR;
    task_fn[id] = fn;
    task_arg[id] = arg;
    kernel_pid_t pid = thread_create(stacks[id], sizeof stacks[id], (uint8_t)(prio - 1), THREAD_CREATE_WOUT_YIELD,
                                     task_entry, (void *)(intptr_t)id, name);
    if (pid < 0) return CT_ERR;
    task_pid[id] = pid;
    task_used[id] = 1u;
    thread_t *t = thread_get(pid);
    ct_riot_trace_task((uint32_t)(uintptr_t)t, thread_get_name(t), (unsigned)(prio - 1),
                       (uint32_t)(uintptr_t)stacks[id]);
    if (started) thread_yield_higher();
    return CT_OK;
}

ct_status ct_task_yield(void)
{
    thread_yield();
    return CT_OK;
}

ct_status ct_task_sleep(uint32_t ticks)
{
    ztimer_sleep(&ct_clock, ticks);
    return CT_OK;
}

ct_status ct_task_delay_until(uint32_t *wake, uint32_t period_ticks)
{
    if (!wake) return CT_ERR;
    ztimer_periodic_wakeup(&ct_clock, wake, period_ticks);
    return CT_OK;
}

static int task_id_of(kernel_pid_t pid)
{
    for (int i = 0; i < CT_MAX_TASKS; ++i)
        if (task_used[i] && task_pid[i] == pid) return i;
    return -1;
}

int ct_task_self(void) { return irq_is_in() ? -1 : task_id_of(thread_getpid()); }

ct_status ct_task_suspend(int id)
{
    if (id < 0 || id >= CT_MAX_TASKS || !task_used[id]) return CT_ERR;
    if (!started) {
        task_start_suspended[id] = 1u;
        return CT_OK;
    }
    if (task_pid[id] == thread_getpid() && !irq_is_in()) {
        thread_sleep();
        return CT_OK;
    }
    unsigned s = irq_disable();
    thread_t *t = thread_get(task_pid[id]);
    int ok = t && t->status >= STATUS_ON_RUNQUEUE;
    if (ok) sched_set_status(t, STATUS_SLEEPING);
    irq_restore(s);
    return ok ? CT_OK : CT_ERR;
}

ct_status ct_task_resume(int id)
{
    if (id < 0 || id >= CT_MAX_TASKS || !task_used[id]) return CT_ERR;
    if (!started) {
        task_start_suspended[id] = 0u;
        return CT_OK;
    }
    return thread_wakeup(task_pid[id]) == 1 ? CT_OK : CT_ERR;
}

/* ---- semaphores -------------------------------------------------------------------------------------- */

static ct_status sema_take(sema_t *s, uint32_t timeout)
{
    int r;
    if (timeout == CT_WAIT_FOREVER) r = sema_wait(s);
    else if (timeout == 0u) r = sema_try_wait(s);
    else r = sema_wait_timed_ztimer(s, &ct_clock, timeout);
    if (r == 0) return CT_OK;
    return (r == -ETIMEDOUT || r == -EAGAIN) ? CT_ERR_TIMEOUT : CT_ERR;
}

ct_status ct_sem_create(int id, unsigned initial)
{
    if (id < 0 || id >= CT_MAX_SEMS || sem_used[id]) return CT_ERR;
    sema_create(&sems[id], initial);
    sem_used[id] = 1u;
    return CT_OK;
}

ct_status ct_sem_take(int id, uint32_t timeout_ticks)
{
    if (id < 0 || id >= CT_MAX_SEMS || !sem_used[id]) return CT_ERR;
    return sema_take(&sems[id], timeout_ticks);
}

ct_status ct_sem_give(int id)
{
    if (id < 0 || id >= CT_MAX_SEMS || !sem_used[id]) return CT_ERR;
    return sema_post(&sems[id]) == 0 ? CT_OK : CT_ERR;
}

/* sema_post is ISR-safe; the woken thread runs at ct_port_isr_exit (cortexm_isr_end). */
ct_status ct_sem_give_from_isr(int id) { return ct_sem_give(id); }

/* ---- queues: ring of ct_msg + semaphores counting used and free slots -------------------------------- */

ct_status ct_queue_create(int id, unsigned depth)
{
    if (id < 0 || id >= CT_MAX_QUEUES || queue_used[id] || depth == 0u) return CT_ERR;
    if (depth > CT_RIOT_QUEUE_POOL_MSGS - queue_pool_used) return CT_ERR;
    queues[id].ring = &queue_pool[queue_pool_used];
    queue_pool_used += depth;
    queues[id].depth = depth;
    queues[id].head = queues[id].tail = 0u;
    sema_create(&queues[id].used, 0u);
    sema_create(&queues[id].free, depth);
    queue_used[id] = 1u;
    return CT_OK;
}

static void queue_put(int id, const ct_msg *msg)
{
    unsigned s = irq_disable();
    queues[id].ring[queues[id].tail] = *msg;
    queues[id].tail = (queues[id].tail + 1u) % queues[id].depth;
    irq_restore(s);
    sema_post(&queues[id].used);
}

ct_status ct_queue_send(int id, const ct_msg *msg, uint32_t timeout_ticks)
{
    if (id < 0 || id >= CT_MAX_QUEUES || !queue_used[id] || !msg) return CT_ERR;
    ct_status st = sema_take(&queues[id].free, timeout_ticks);
    if (st != CT_OK) return st;
    queue_put(id, msg);
    return CT_OK;
}

ct_status ct_queue_send_from_isr(int id, const ct_msg *msg)
{
    if (id < 0 || id >= CT_MAX_QUEUES || !queue_used[id] || !msg) return CT_ERR;
    if (sema_try_wait(&queues[id].free) != 0) return CT_ERR;
    queue_put(id, msg);
    return CT_OK;
}

ct_status ct_queue_receive(int id, ct_msg *msg, uint32_t timeout_ticks)
{
    if (id < 0 || id >= CT_MAX_QUEUES || !queue_used[id] || !msg) return CT_ERR;
    ct_status st = sema_take(&queues[id].used, timeout_ticks);
    if (st != CT_OK) return st;
    unsigned s = irq_disable();
    *msg = queues[id].ring[queues[id].head];
    queues[id].head = (queues[id].head + 1u) % queues[id].depth;
    irq_restore(s);
    sema_post(&queues[id].free);
    return CT_OK;
}

/* ---- block pools: RIOT has none; fixed blocks carved from a static arena, free list under irq lock ------ */

ct_status ct_pool_create(int id, unsigned block_bytes, unsigned nblocks)
{
    if (id < 0 || id >= CT_MAX_POOLS || pool_used[id] || block_bytes == 0u || nblocks == 0u) return CT_ERR;
    unsigned bb = (block_bytes + 7u) & ~7u;
    if (bb * nblocks > sizeof pool_arena - pool_arena_used) return CT_ERR;
    uint8_t *base = (uint8_t *)pool_arena + pool_arena_used;
    pool_arena_used += bb * nblocks;
    pools[id].free_list = NULL;
    for (unsigned i = nblocks; i-- > 0u;) {
        void **b = (void **)(uintptr_t)(base + i * bb);
        *b = pools[id].free_list;
        pools[id].free_list = b;
    }
    pools[id].block_bytes = bb;
    pool_used[id] = 1u;
    return CT_OK;
}

ct_status ct_pool_alloc(int id, void **block)
{
    if (id < 0 || id >= CT_MAX_POOLS || !pool_used[id] || !block) return CT_ERR;
    unsigned s = irq_disable();
    void **b = pools[id].free_list;
    if (b) pools[id].free_list = *b;
    irq_restore(s);
    *block = b;
    return b ? CT_OK : CT_ERR;
}

ct_status ct_pool_free(int id, void *block)
{
    if (id < 0 || id >= CT_MAX_POOLS || !pool_used[id] || !block) return CT_ERR;
    unsigned s = irq_disable();
    *(void **)block = pools[id].free_list;
    pools[id].free_list = block;
    irq_restore(s);
    return CT_OK;
}
