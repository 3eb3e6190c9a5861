/* ct_port_zephyr.c — the porting layer on Zephyr: ids index static arrays of k_thread / k_sem / k_msgq,
 * stacks from one K_THREAD_STACK_ARRAY (MPU-guard aligned when stack protection is on), native status
 * mapped to CT_* explicitly. ct priority p is Zephyr preemptive priority p (1..31); the main thread, after
 * app_init(), drops to priority 32 and drains the trace forever, so Zephyr's idle thread (WFI) never runs.
 * The TIM5 benchmark interrupt goes through IRQ_CONNECT (Zephyr's _isr_wrapper records ISR enter/exit and
 * reschedules at exit), so ct_port_isr_enter/exit have nothing left to do. Tracing: ct_trace_zephyr.c. */
#include <errno.h>
#include <zephyr/kernel.h>
#include <zephyr/fatal.h>
#include <zephyr/irq.h>
#include <zephyr/version.h>

#include "ct_app.h"
#include "ct_port.h"
#include "ct_port_zephyr.h"

#ifndef CT_ZEPHYR_STACK_BYTES
#define CT_ZEPHYR_STACK_BYTES 2560u /* per task: the largest app request (512 words) + FP context */
#endif
#define CT_ZEPHYR_QUEUE_POOL_MSGS 64u
#define CT_ZEPHYR_DRAIN_PRIO (CT_PRIO_LOWEST + 1) /* = K_LOWEST_APPLICATION_THREAD_PRIO */
#define CT_TIM5_IRQN 50                           /* STM32F4 TIM5 global interrupt */
#define CT_TIM5_ZEPHYR_PRIO 5                     /* NVIC 0x60 with 4 bits: the board's CT_BENCH_IRQ_PRIO */

BUILD_ASSERT(CT_ZEPHYR_DRAIN_PRIO == K_LOWEST_APPLICATION_THREAD_PRIO,
             "CONFIG_NUM_PREEMPT_PRIORITIES must be 33: ct 1..31, trace drain 32, idle 33");

static struct k_thread threads[CT_MAX_TASKS];
static ct_task_fn thread_fn[CT_MAX_TASKS];
static uint8_t thread_used[CT_MAX_TASKS];
K_THREAD_STACK_ARRAY_DEFINE(ct_stacks, CT_MAX_TASKS, CT_ZEPHYR_STACK_BYTES);
static struct k_sem sems[CT_MAX_SEMS];
static uint8_t sem_used[CT_MAX_SEMS];
static struct k_msgq queues[CT_MAX_QUEUES];
static uint8_t queue_used[CT_MAX_QUEUES];
static ct_msg queue_pool[CT_ZEPHYR_QUEUE_POOL_MSGS] __aligned(4);
static unsigned queue_pool_used;

const char *ct_port_name(void) { return "zephyr"; }
const char *ct_port_version(void) { return KERNEL_VERSION_STRING; }

static k_timeout_t native_timeout(uint32_t t)
{
    if (t == CT_WAIT_FOREVER) return K_FOREVER;
    if (t == 0u) return K_NO_WAIT;
    return K_TICKS(t);
}

/* ---- start ------------------------------------------------------------------------------------------- */

void TIM5_IRQHandler(void); /* boards/common/stm32f4_common.c: acknowledges TIM5, calls the app handler */

static void tim5_isr(const void *arg)
{
    (void)arg;
    TIM5_IRQHandler();
}

/* Called from main() on Zephyr's main thread (priority 0, above every ct task): objects and tasks are
 * created before any of them runs; then this thread becomes the trace drain below every task. */
void ct_port_start(void (*app_init)(void))
{
    IRQ_CONNECT(CT_TIM5_IRQN, CT_TIM5_ZEPHYR_PRIO, tim5_isr, NULL, 0);
    ct_zephyr_trace_start();
    app_init();
    k_thread_priority_set(k_current_get(), CT_ZEPHYR_DRAIN_PRIO);
    for (;;) ct_port_trace_poll(); /* never WFI (QEMU time rule); the ct tasks preempt this at will */
}

/* ---- tasks ------------------------------------------------------------------------------------------- */

static void thread_entry(void *p1, void *p2, void *p3)
{
    (void)p3;
    int id = (int)(intptr_t)p1;
    thread_fn[id](p2);
}

ct_status ct_task_create(int id, const char *name, int prio, ct_task_fn fn, void *arg, unsigned stack_words)
{
    if (id < 0 || id >= CT_MAX_TASKS || thread_used[id] || fn == NULL || prio < CT_PRIO_HIGHEST ||
        prio > CT_PRIO_LOWEST)
        return CT_ERR;
    if (stack_words == 0u) stack_words = 512u;
    if (stack_words * 4u + 512u > CT_ZEPHYR_STACK_BYTES) return CT_ERR; /* + FP context and ISR frame */
    thread_fn[id] = fn;
    thread_used[id] = 1u;
    k_tid_t t = k_thread_create(&threads[id], ct_stacks[id], K_THREAD_STACK_SIZEOF(ct_stacks[id]),
                                thread_entry, (void *)(intptr_t)id, arg, NULL, prio, 0, K_FOREVER);
    if (t == NULL) {
        thread_used[id] = 0u;
        return CT_ERR;
    }
    if (name != NULL && k_thread_name_set(t, name) != 0) return CT_ERR;
    k_thread_start(t); /* after the name is set, so the trace names it */
    return CT_OK;
}

ct_status ct_task_yield(void)
{
    k_yield();
    return CT_OK;
}

ct_status ct_task_sleep(uint32_t ticks)
{
    (void)k_sleep(K_TICKS(ticks)); /* returns the time left when woken early: never here */
    return CT_OK;
}

uint32_t ct_tick_now(void) { return (uint32_t)k_uptime_ticks(); }

/* Absolute wake-up at tick *wake + period (K_TIMEOUT_ABS_TICKS: no drift, no rounding of a relative
 * timeout); a target already in the past returns at once, as xTaskDelayUntil does. */
ct_status ct_task_delay_until(uint32_t *wake, uint32_t period_ticks)
{
    uint32_t target = *wake + period_ticks;
    int64_t now = k_uptime_ticks();
    int32_t left = (int32_t)(target - (uint32_t)now);
    *wake = target;
    if (left <= 0) return CT_OK;
    (void)k_sleep(K_TIMEOUT_ABS_TICKS(now + left));
    return CT_OK;
}

/* ---- semaphores -------------------------------------------------------------------------------------- */

ct_status ct_sem_create(int id, unsigned initial)
{
    if (id < 0 || id >= CT_MAX_SEMS || sem_used[id]) return CT_ERR;
    if (k_sem_init(&sems[id], initial, K_SEM_MAX_LIMIT) != 0) return CT_ERR;
    sem_used[id] = 1u;
    return CT_OK;
}

ct_status ct_sem_take(int id, uint32_t timeout_ticks)
{
    if (id < 0 || id >= CT_MAX_SEMS || !sem_used[id]) return CT_ERR;
    switch (k_sem_take(&sems[id], native_timeout(timeout_ticks))) {
    case 0: return CT_OK;
    case -EAGAIN: /* timed out */
    case -EBUSY:  /* K_NO_WAIT and not available */
        return CT_ERR_TIMEOUT;
    default: return CT_ERR;
    }
}

ct_status ct_sem_give(int id)
{
    if (id < 0 || id >= CT_MAX_SEMS || !sem_used[id]) return CT_ERR;
    k_sem_give(&sems[id]);
    return CT_OK;
}

/* k_sem_give is ISR-safe; a woken thread of higher priority runs when _isr_wrapper exits. */
ct_status ct_sem_give_from_isr(int id) { return ct_sem_give(id); }

/* ---- queues ------------------------------------------------------------------------------------------ */

ct_status ct_queue_create(int id, unsigned depth)
{
    if (id < 0 || id >= CT_MAX_QUEUES || queue_used[id] || depth == 0u ||
        depth > CT_ZEPHYR_QUEUE_POOL_MSGS - queue_pool_used)
        return CT_ERR;
    k_msgq_init(&queues[id], (char *)&queue_pool[queue_pool_used], sizeof(ct_msg), depth);
    queue_pool_used += depth;
    queue_used[id] = 1u;
    return CT_OK;
}

static ct_status map_msgq(int rc)
{
    switch (rc) {
    case 0: return CT_OK;
    case -EAGAIN: /* timed out */
    case -ENOMSG: /* K_NO_WAIT: full (put) or empty (get) */
        return CT_ERR_TIMEOUT;
    default: return CT_ERR;
    }
}

ct_status ct_queue_send(int id, const ct_msg *msg, uint32_t timeout_ticks)
{
    if (id < 0 || id >= CT_MAX_QUEUES || !queue_used[id]) return CT_ERR;
    return map_msgq(k_msgq_put(&queues[id], msg, native_timeout(timeout_ticks)));
}

ct_status ct_queue_send_from_isr(int id, const ct_msg *msg)
{
    if (id < 0 || id >= CT_MAX_QUEUES || !queue_used[id]) return CT_ERR;
    return k_msgq_put(&queues[id], msg, K_NO_WAIT) == 0 ? CT_OK : CT_ERR;
}

ct_status ct_queue_receive(int id, ct_msg *msg, uint32_t timeout_ticks)
{
    if (id < 0 || id >= CT_MAX_QUEUES || !queue_used[id]) return CT_ERR;
    return map_msgq(k_msgq_get(&queues[id], msg, native_timeout(timeout_ticks)));
}

/* ---- Thread-Metric additions: suspend/resume, running task, block pools (k_mem_slab) ------------------ */

ct_status ct_task_suspend(int id)
{
    if (id < 0 || id >= CT_MAX_TASKS || !thread_used[id]) return CT_ERR;
    k_thread_suspend(&threads[id]);
    return CT_OK;
}

/* ISR-safe: a resumed thread of higher priority runs when _isr_wrapper exits. */
ct_status ct_task_resume(int id)
{
    if (id < 0 || id >= CT_MAX_TASKS || !thread_used[id]) return CT_ERR;
    k_thread_resume(&threads[id]);
    return CT_OK;
}

int ct_task_self(void)
{
    const struct k_thread *cur = k_current_get();
    if (cur < &threads[0] || cur >= &threads[CT_MAX_TASKS]) return -1;
    return (int)(cur - &threads[0]);
}

#ifndef CT_ZEPHYR_POOL_BYTES
#define CT_ZEPHYR_POOL_BYTES 2048u /* per pool, as Thread-Metric's 2048-byte pool */
#endif
static struct k_mem_slab pools[CT_MAX_POOLS];
static uint8_t pool_used[CT_MAX_POOLS];
static uint32_t pool_storage[CT_MAX_POOLS][CT_ZEPHYR_POOL_BYTES / 4u];

ct_status ct_pool_create(int id, unsigned block_bytes, unsigned nblocks)
{
    if (id < 0 || id >= CT_MAX_POOLS || pool_used[id] || block_bytes == 0u || nblocks == 0u) return CT_ERR;
    size_t bsize = ((size_t)block_bytes + 3u) & ~(size_t)3u; /* k_mem_slab: word-aligned blocks */
    if ((size_t)nblocks * bsize > sizeof pool_storage[id]) nblocks = (unsigned)(sizeof pool_storage[id] / bsize);
    if (nblocks == 0u || k_mem_slab_init(&pools[id], pool_storage[id], bsize, nblocks) != 0) return CT_ERR;
    pool_used[id] = 1u;
    return CT_OK;
}

ct_status ct_pool_alloc(int id, void **block)
{
    if (id < 0 || id >= CT_MAX_POOLS || !pool_used[id]) return CT_ERR;
    return k_mem_slab_alloc(&pools[id], block, K_NO_WAIT) == 0 ? CT_OK : CT_ERR;
}

ct_status ct_pool_free(int id, void *block)
{
    if (id < 0 || id >= CT_MAX_POOLS || !pool_used[id] || block == NULL) return CT_ERR;
    k_mem_slab_free(&pools[id], block);
    return CT_OK;
}

/* ---- interrupts -------------------------------------------------------------------------------------- */

/* Zephyr's _isr_wrapper already records ISR enter/exit (CONFIG_TRACING_ISR) and performs the pending
 * switch at exit (z_arm_int_exit): recording here too would count every TIM5 interrupt twice. */
void ct_port_isr_enter(void) {}
void ct_port_isr_exit(void) {}

/* ---- failures ---------------------------------------------------------------------------------------- */

/* A kernel fatal error (fault, MPU stack-guard hit, k_panic) ends the run with the failure sentinel
 * instead of Zephyr's default halt, so a broken image can never pass for a hung-but-fine one. */
void k_sys_fatal_error_handler(unsigned int reason, const struct arch_esf *esf)
{
    char why[48] = "k_sys_fatal_error reason=";
    (void)esf;
    (void)ct_fmt_u32(why + 25, sizeof why - 25u, reason);
    ct_fail("port.zephyr", why);
    ct_zephyr_fatal_done();
}
