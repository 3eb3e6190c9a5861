/* tm_port_ct.c — Thread-Metric's porting layer (tm_api.h), written once on crosstrace's porting layer
 * (ct_port.h), so the upstream tests run unchanged on every ct port (FreeRTOS, ThreadX, later Zephyr).
 *
 * Time: the unit of tm_thread_sleep() is 1 ms (one kernel tick) and the tests are compiled with
 * TM_TEST_DURATION = CT_TM_PERIOD_MS, so a reporting period is CT_TM_PERIOD_MS of virtual time (published
 * runs: 30000). After CT_TM_PERIODS reports the run ends (CT_INFO counts, CT_RESULT, CT_DONE).
 * Instrumentation (CT_TM_SITES=1): every counting thread fires site tm.count on every CT_TM_SITE_EVERY-th
 * call of the one service it calls once per iteration (tm_ct.h), the interrupt handler fires tm.isr
 * likewise, the reporting thread fires tm.report when it wakes. CT_TM_SITES=0 removes every hook (the
 * pristine suite). Interrupts: TM_CAUSE_INTERRUPT pends TIM5, whose board wrapper records ISR enter/exit
 * and calls the test's handler. */
#include <stdarg.h>
#include <stdint.h>

#include "ct_app.h"
#include "ct_board.h"
#include "ct_mark.h"
#include "ct_port.h"
#include "tm_api.h"
#include "tm_ct.h"

#ifndef CT_TM_PERIOD_MS
#define CT_TM_PERIOD_MS 20
#endif
#ifndef CT_TM_PERIODS
#define CT_TM_PERIODS 3
#endif
#ifndef CT_TM_SITES
#define CT_TM_SITES 1
#endif
#ifndef CT_TM_SITE_EVERY
#define CT_TM_SITE_EVERY 256
#endif
#ifndef CT_TM_SAMPLE_US
#define CT_TM_SAMPLE_US 100
#endif
#if TM_TEST_DURATION != CT_TM_PERIOD_MS
#error "compile the tests with TM_TEST_DURATION=CT_TM_PERIOD_MS (thread_metric.cmake)"
#endif

#define TM_STACK_WORDS 384u
#define TM_QUEUE_DEPTH 10u /* upstream ThreadX port: 200-byte queue of 16-byte messages */
#define TM_POOL_BLOCK 128u
#define TM_POOL_BLOCKS 15u /* 2048-byte pool */
#define TM_MAX_THREADS 6   /* ids 0..5 (5 = reporting thread) */

#define NVIC_ISPR1 (*(volatile uint32_t *)0xE000E204u)
#define NVIC_ICPR1 (*(volatile uint32_t *)0xE000E284u)
#define TIM5_SR (*(volatile uint32_t *)0x40000C10u)
#define TIM5_IRQ_BIT (1u << (50u - 32u))

static void (*entries[TM_MAX_THREADS])(void);
static const char *const names[TM_MAX_THREADS] = {"tm0", "tm1", "tm2", "tm3", "tm4", "tm_report"};

/* ---- instrumentation ----------------------------------------------------------------------------- */

#if CT_TM_SITES
static uint32_t iter_calls[TM_CT_MAX_COUNTING];
static uint32_t isr_calls;
#endif

static inline int in_isr(void)
{
    uint32_t ipsr;
    __asm volatile("mrs %0, ipsr" : "=r"(ipsr));
    return (ipsr & 0x1FFu) != 0u;
}

#if CT_TRACE
static uint32_t drain_ticks; /* time spent writing the trace out (semihosting), reported separately */
/* The counting threads never idle, so the recorder's buffer is drained here (FreeRTOS/SystemView; the
 * ThreadX port keeps its buffer in RAM: no-op). A real probe reads RTT without CPU time. */
static volatile uint32_t draining;
static void drain(void)
{
    /* One reader at a time: the RTT read is not reentrant, and a thread preempted inside it (tick, time
     * slicing, the reporting thread) by another drain would rewind the read offset and duplicate data. */
    uint32_t m = ct_irq_save();
    if (draining) {
        ct_irq_restore(m);
        return;
    }
    draining = 1u;
    ct_irq_restore(m);
    uint32_t t0 = ct_ts();
    ct_port_trace_poll();
    drain_ticks += ct_ts() - t0;
    draining = 0u;
}
#endif

/* Called at the entry of every service: one tm.count per CT_TM_SITE_EVERY iterations of each counting
 * thread, one tm.isr per CT_TM_SITE_EVERY handler runs. */
static inline __attribute__((always_inline)) void hook(unsigned api)
{
#if CT_TM_SITES
    const tm_ct_app *a = &tm_ct_this_app;
    if (in_isr()) {
        if (api == a->isr_api && ++isr_calls >= CT_TM_SITE_EVERY) {
            isr_calls = 0u;
            ct_site(CT_SITE_TM_ISR);
        }
        return;
    }
    int t = ct_task_self();
    if ((unsigned)t < a->nthreads && a->iter_api[t] == api && ++iter_calls[t] >= CT_TM_SITE_EVERY) {
        iter_calls[t] = 0u;
        ct_site(CT_SITE_TM_COUNT);
#if CT_TRACE
        drain();
#endif
    }
#else
    (void)api;
#endif
}

#if CT_TM_SITES
static unsigned long sampled_last;
/* basic processing: its thread calls no service, so TIM5 samples the counter every CT_TM_SAMPLE_US */
static void sampler(void)
{
    unsigned long c = *tm_ct_this_app.counters[0];
    if (c - sampled_last >= CT_TM_SITE_EVERY) {
        sampled_last += CT_TM_SITE_EVERY;
        ct_site(CT_SITE_TM_COUNT);
    }
}
#endif

static uint32_t determinism_errors; /* the suite's "ERROR: Invalid counter value(s)" reports */

/* ---- reporting periods --------------------------------------------------------------------------- */

static unsigned sleeps;
static uint32_t period_ts[CT_TM_PERIODS + 1];
static unsigned long snap[CT_TM_PERIODS + 1][TM_CT_MAX_COUNTING + 1]; /* [k][j]: counters, [k][n]: isr */

static void snapshot(unsigned k)
{
    const tm_ct_app *a = &tm_ct_this_app;
    period_ts[k] = ct_ts();
    for (unsigned j = 0; j < a->nthreads; ++j) snap[k][j] = *a->counters[j];
    snap[k][TM_CT_MAX_COUNTING] = a->isr_counter ? *a->isr_counter : 0ul;
}

static void info2(const char *pre, unsigned k, const char *post, uint32_t v)
{
    char key[48];
    size_t n = 0;
    for (const char *c = pre; *c && n < 20; ++c) key[n++] = *c;
    n += ct_fmt_u32(key + n, sizeof key - n, k);
    for (const char *c = post; *c && n < sizeof key - 1; ++c) key[n++] = *c;
    key[n] = '\0';
    ct_info(key, v);
}

static void finish(void) __attribute__((noreturn));
static void finish(void)
{
    const tm_ct_app *a = &tm_ct_this_app;
    ct_stat per;
    ct_stat_init(&per);
    ct_bench_irq_stop();
    ct_info("tm.period_ms", CT_TM_PERIOD_MS);
    ct_info("tm.site_every", CT_TM_SITE_EVERY);
    ct_info("tm.threads", a->nthreads);
    ct_info("tm.determinism.errors", determinism_errors); /* judged by the analyzer, not a run failure */
#if CT_TRACE
    ct_info("tm.drain_ticks", drain_ticks);
#endif
    for (unsigned k = 1; k <= CT_TM_PERIODS; ++k) {
        unsigned long total = 0ul;
        for (unsigned j = 0; j < a->nthreads; ++j) {
            unsigned long d = snap[k][j] - snap[k - 1][j];
            total += d;
            char post[8] = ".t0";
            post[2] = (char)('0' + j);
            info2("tm.p", k, post, (uint32_t)d);
        }
        if (a->isr_counter)
            info2("tm.p", k, ".isr", (uint32_t)(snap[k][TM_CT_MAX_COUNTING] - snap[k - 1][TM_CT_MAX_COUNTING]));
        info2("tm.p", k, ".total", (uint32_t)total);
        ct_stat_add(&per, period_ts[k] - period_ts[k - 1]);
    }
    char metric[40] = "tm.";
    size_t n = 3;
    for (const char *c = a->test; *c && n < 30; ++c) metric[n++] = *c;
    for (const char *c = ".period"; *c; ++c) metric[n++] = *c;
    metric[n] = '\0';
    ct_result(metric, &per);
    ct_app_finish();
}

/* ---- tm_api.h -------------------------------------------------------------------------------------- */

void tm_initialize(void (*test_initialization_function)(void))
{
    test_initialization_function(); /* already inside ct_port_start's app_init */
}

static void trampoline(void *arg)
{
    entries[(intptr_t)arg]();
}

int tm_thread_create(int thread_id, int priority, void (*entry_function)(void))
{
    if (thread_id < 0 || thread_id >= TM_MAX_THREADS) return TM_ERROR;
    entries[thread_id] = entry_function;
    if (ct_task_create(thread_id, names[thread_id], priority, trampoline, (void *)(intptr_t)thread_id,
                       TM_STACK_WORDS) != CT_OK)
        return TM_ERROR;
    return ct_task_suspend(thread_id) == CT_OK ? TM_SUCCESS : TM_ERROR; /* created suspended */
}

int tm_thread_resume(int thread_id)
{
    hook(TM_CT_API_RESUME);
    return ct_task_resume(thread_id) == CT_OK ? TM_SUCCESS : TM_ERROR;
}

int tm_thread_suspend(int thread_id)
{
    hook(TM_CT_API_SUSPEND);
    return ct_task_suspend(thread_id) == CT_OK ? TM_SUCCESS : TM_ERROR;
}

void tm_thread_relinquish(void)
{
    hook(TM_CT_API_RELINQUISH);
    (void)ct_task_yield();
}

/* TIM5: the interrupt tests' "software interrupt" (a period of ~71 minutes: it only fires when pended),
 * or basic processing's sampler. Starting the timer raises an update at once; it is discarded (masked,
 * flag and NVIC pending bit cleared), otherwise the handler would run once more than the threads. */
static void start_irq(void)
{
    uint32_t m = ct_irq_save();
    if (tm_ct_this_app.isr_handler) {
        ct_bench_irq_start(0xFFFFFFFFu, tm_ct_this_app.isr_handler);
#if CT_TM_SITES
    } else if (tm_ct_this_app.sampled) {
        ct_bench_irq_start(CT_TM_SAMPLE_US, sampler);
#endif
    } else {
        ct_irq_restore(m);
        return;
    }
    TIM5_SR = 0u;
    NVIC_ICPR1 = TIM5_IRQ_BIT;
    ct_irq_restore(m);
}

/* Only the reporting thread sleeps. Unit: 1 ms = 1 tick (TM_TEST_DURATION = CT_TM_PERIOD_MS). */
void tm_thread_sleep(int ms)
{
    if (sleeps == 0u) {
        snapshot(0u);
        start_irq();
    } else if (sleeps >= CT_TM_PERIODS) {
        finish();
    }
    (void)ct_task_sleep((uint32_t)ms);
    ++sleeps;
#if CT_TM_SITES
    ct_site(CT_SITE_TM_REPORT);
#endif
    if (sleeps <= CT_TM_PERIODS) snapshot(sleeps);
#if CT_TRACE
    drain();
#endif
}

void tm_ct_cause_interrupt(void)
{
    hook(TM_CT_API_CAUSE_INTERRUPT);
    NVIC_ISPR1 = TIM5_IRQ_BIT; /* taken at once: TIM5 is enabled and above thread priority */
    __asm volatile("dsb\n isb" ::: "memory");
}

int tm_queue_create(int queue_id)
{
    return ct_queue_create(queue_id, TM_QUEUE_DEPTH) == CT_OK ? TM_SUCCESS : TM_ERROR;
}

int tm_queue_send(int queue_id, unsigned long *message_ptr)
{
    hook(TM_CT_API_QUEUE_SEND);
    return ct_queue_send(queue_id, (const ct_msg *)(void *)message_ptr, CT_WAIT_FOREVER) == CT_OK ? TM_SUCCESS
                                                                                             : TM_ERROR;
}

int tm_queue_receive(int queue_id, unsigned long *message_ptr)
{
    return ct_queue_receive(queue_id, (ct_msg *)(void *)message_ptr, CT_WAIT_FOREVER) == CT_OK ? TM_SUCCESS
                                                                                        : TM_ERROR;
}

int tm_semaphore_create(int semaphore_id)
{
    return ct_sem_create(semaphore_id, 1u) == CT_OK ? TM_SUCCESS : TM_ERROR; /* upstream: initial count 1 */
}

int tm_semaphore_get(int semaphore_id)
{
    hook(TM_CT_API_SEM_GET);
    return ct_sem_take(semaphore_id, CT_WAIT_FOREVER) == CT_OK ? TM_SUCCESS : TM_ERROR;
}

int tm_semaphore_put(int semaphore_id)
{
    hook(TM_CT_API_SEM_PUT);
    ct_status st = in_isr() ? ct_sem_give_from_isr(semaphore_id) : ct_sem_give(semaphore_id);
    return st == CT_OK ? TM_SUCCESS : TM_ERROR;
}

int tm_memory_pool_create(int pool_id)
{
    return ct_pool_create(pool_id, TM_POOL_BLOCK, TM_POOL_BLOCKS) == CT_OK ? TM_SUCCESS : TM_ERROR;
}

int tm_memory_pool_allocate(int pool_id, unsigned char **memory_ptr)
{
    hook(TM_CT_API_POOL_ALLOC);
    return ct_pool_alloc(pool_id, (void **)memory_ptr) == CT_OK ? TM_SUCCESS : TM_ERROR;
}

int tm_memory_pool_deallocate(int pool_id, unsigned char *memory_ptr)
{
    return ct_pool_free(pool_id, memory_ptr) == CT_OK ? TM_SUCCESS : TM_ERROR;
}

/* ---- console ------------------------------------------------------------------------------------- */

/* The tests' printf: %lu %u %d %s %%, one console line per '\n' as "TM <text>"; a line starting with
 * "ERROR" (the suite's determinism check failed) is counted (CT_INFO tm.determinism.errors). */
int tm_ct_printf(const char *fmt, ...)
{
    static char ln[160];
    static size_t n;
    va_list ap;
    va_start(ap, fmt);
    for (const char *c = fmt; *c; ++c) {
        if (*c == '%' && c[1]) {
            ++c;
            if (*c == 'l') ++c;
            unsigned long v;
            const char *s = 0;
            char num[12];
            if (*c == 's') {
                s = va_arg(ap, const char *);
            } else if (*c == 'd') {
                long d = va_arg(ap, int);
                if (d < 0 && n < sizeof ln - 1) ln[n++] = '-';
                v = (unsigned long)(d < 0 ? -d : d);
                ct_fmt_u32(num, sizeof num, (uint32_t)v);
                s = num;
            } else if (*c == 'u') {
                v = c[-1] == 'l' ? va_arg(ap, unsigned long) : va_arg(ap, unsigned);
                ct_fmt_u32(num, sizeof num, (uint32_t)v);
                s = num;
            } else {
                s = "%";
            }
            while (*s && n < sizeof ln - 1) ln[n++] = *s++;
        } else if (*c == '\n') {
            ln[n] = '\0';
            if (n) {
                ct_puts("TM ");
                ct_puts(ln);
                ct_puts("\r\n");
                if (ln[0] == 'E' && ln[1] == 'R' && ln[2] == 'R') determinism_errors++;
            }
            n = 0;
        } else if (n < sizeof ln - 1) {
            ln[n++] = *c;
        }
    }
    va_end(ap);
    return 0;
}
