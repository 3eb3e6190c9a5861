/* finegrained — the eight fine-grained kernel benchmarks of Belleza & de Freitas 2018 (IET Software;
 * ../shared/specs/published-results.md section 4), one test per image (CT_FG_TEST = A .. H), written once
 * against the porting layer. Tests A-F measure each kernel call between two toggles of one site: the
 * call starts at toggle 4k, ends at 4k+1; the second call of the pair starts at 4k+2 and ends at 4k+3.
 * The A-F mark is site tm.count (PG15): every GPIOG pin already carries a site, so the fine-grained
 * marks reuse the Thread-Metric counting site (its analyzer only runs for Thread-Metric runs,
 * CT_TM_SITE_EVERY). Test G uses the isr_latency sites, test H the periodic sites (their own metrics).
 *   A task suspend/resume: A (higher priority) suspends itself (A: start, B: end), B resumes A (B: start,
 *     A: end): ops suspend, resume (each includes the switch).
 *   B semaphore give then take by one task (created taken): ops give, take.
 *   C semaphore passing: A takes an empty semaphore (blocks; B: end), B gives (A: end): ops take, give.
 *   D message send then receive by one task: ops send, receive.
 *   E message passing: A receives on an empty queue (blocks), B sends: ops receive, send.
 *   F fixed-size block acquire then release: ops alloc, free.
 *   G task activation from an ISR: A suspends itself, B spins at lower priority, the TIM5 handler resumes
 *     A (isr.enter in the handler, isr.task_wake first thing in A): metric isr.to_task.latency.
 *   H activation jitter: a periodic task (CT_PERIOD_FAST_MS ticks, delay-until, site periodic.fast) while a
 *     lower-priority task C gives and takes its own semaphore, then spins CT_FG_LOAD_SPIN loop iterations
 *     (the spin bounds the trace volume; docs/benchmarks.md). Metrics periodic.fast.period, .jitter.abs.
 * Every measurement is also timed by the firmware (ct_ts just before each site): CT_RESULT fg.<T>.<op>.
 * CT_FG_BATCHES x CT_FG_SAMPLES measurements per op; the trace is drained between batches. */
#include "ct_app.h"
#include "ct_mark.h"

#ifndef CT_FG_TEST
#define CT_FG_TEST A
#endif
#ifndef CT_FG_BATCHES
#define CT_FG_BATCHES 2
#endif
#ifndef CT_FG_SAMPLES
#define CT_FG_SAMPLES 128
#endif
#ifndef CT_FG_ISR_PERIOD_US
#define CT_FG_ISR_PERIOD_US 100
#endif
#ifndef CT_PERIOD_FAST_MS
#define CT_PERIOD_FAST_MS 1
#endif
#ifndef CT_FG_LOAD_SPIN
#define CT_FG_LOAD_SPIN 2000
#endif

#define FG_STR_(x) #x
#define FG_STR(x) FG_STR_(x)
#define FG_TEST (FG_STR(CT_FG_TEST)[0]) /* 'A' .. 'H', a compile-time constant */
#define FG_N ((uint32_t)CT_FG_BATCHES * (uint32_t)CT_FG_SAMPLES)
#define FG_SITE CT_SITE_TM_COUNT

#define TASK_A 0
#define TASK_B 1
#define PRIO_A 5
#define PRIO_B 10
#define PRIO_LOAD 20
#define SEM 0
#define SEM_LOAD 1
#define QUEUE 0
#define POOL 0
#define POOL_BLOCK_BYTES 32u
#define POOL_BLOCKS 4u

const char ct_app_name[] = "finegrained";

static volatile uint32_t t_start;
static ct_stat st_first, st_second; /* the first and second op of the pair, in trace order */
static volatile uint32_t isr_count;
static volatile int isr_resume_failed;

static const char *op_name(int second)
{
    switch (FG_TEST) {
    case 'A': return second ? "fg.A.resume" : "fg.A.suspend";
    case 'B': return second ? "fg.B.take" : "fg.B.give";
    case 'C': return second ? "fg.C.give" : "fg.C.take";
    case 'D': return second ? "fg.D.receive" : "fg.D.send";
    case 'E': return second ? "fg.E.send" : "fg.E.receive";
    case 'F': return second ? "fg.F.free" : "fg.F.alloc";
    case 'G': return "fg.G.isr_to_task";
    default: return "fg.H.period";
    }
}

static inline void fg_start(void)
{
    t_start = ct_ts();
    ct_site(FG_SITE);
}

static inline void fg_end(ct_stat *s)
{
    uint32_t now = ct_ts();
    ct_site(FG_SITE);
    ct_stat_add(s, now - t_start);
}

/* Between batches (outside every measured interval): the tasks may never let the idle task run. */
static void batch_done(uint32_t i)
{
    if ((i + 1u) % (uint32_t)CT_FG_SAMPLES == 0u) ct_port_trace_poll();
}

static void report(void)
{
    ct_result(op_name(0), &st_first);
    if (FG_TEST <= 'F') ct_result(op_name(1), &st_second);
    ct_info("fg.test", (uint32_t)FG_TEST); /* the letter's ASCII code */
    ct_info("fg.samples", FG_N);
    ct_port_trace_poll();
    ct_app_finish();
}

static void check(ct_status st)
{
    if (st != CT_OK) ct_check_failed(op_name(0), "port call", st, __FILE__, __LINE__);
}

/* ---- one-task tests: B (semaphore), D (queue), F (block pool) ---------------------------------------- */
static void solo_task(void *arg)
{
    (void)arg;
    ct_msg msg = {{1u, 2u, 3u, 4u}};
    void *block = 0;
    for (uint32_t i = 0; i < FG_N; ++i) {
        ct_status a, b;
        if (FG_TEST == 'B') {
            fg_start(); a = ct_sem_give(SEM); fg_end(&st_first);
            fg_start(); b = ct_sem_take(SEM, CT_WAIT_FOREVER); fg_end(&st_second);
        } else if (FG_TEST == 'D') {
            fg_start(); a = ct_queue_send(QUEUE, &msg, CT_WAIT_FOREVER); fg_end(&st_first);
            fg_start(); b = ct_queue_receive(QUEUE, &msg, CT_WAIT_FOREVER); fg_end(&st_second);
        } else {
            fg_start(); a = ct_pool_alloc(POOL, &block); fg_end(&st_first);
            fg_start(); b = ct_pool_free(POOL, block); fg_end(&st_second);
        }
        check(a);
        check(b);
        batch_done(i);
    }
    report();
}

/* ---- two-task tests: A (suspend/resume), C (semaphore passing), E (message passing) ------------------- */
static void high_task(void *arg)
{
    (void)arg;
    ct_msg msg;
    for (uint32_t i = 0; i < FG_N; ++i) {
        ct_status a;
        fg_start();
        if (FG_TEST == 'A')
            a = ct_task_suspend(TASK_A);
        else if (FG_TEST == 'C')
            a = ct_sem_take(SEM, CT_WAIT_FOREVER);
        else
            a = ct_queue_receive(QUEUE, &msg, CT_WAIT_FOREVER);
        fg_end(&st_second); /* B started the second op; it ends here, in A */
        check(a);
        batch_done(i);
    }
    report();
}

static void low_task(void *arg)
{
    (void)arg;
    ct_msg msg = {{1u, 2u, 3u, 4u}};
    for (;;) {
        fg_end(&st_first); /* A's first op (it blocked or suspended itself) ends here, in B */
        fg_start();
        ct_status a;
        if (FG_TEST == 'A')
            a = ct_task_resume(TASK_A);
        else if (FG_TEST == 'C')
            a = ct_sem_give(SEM);
        else
            a = ct_queue_send(QUEUE, &msg, CT_WAIT_FOREVER);
        check(a);
    }
}

/* ---- G: activation from an ISR ------------------------------------------------------------------------ */
static void g_isr(void)
{
    t_start = ct_ts();
    ct_site(CT_SITE_ISR_ENTER);
    isr_count++;
    if (ct_task_resume(TASK_A) != CT_OK) isr_resume_failed = 1;
}

static void g_task(void *arg)
{
    (void)arg;
    ct_bench_irq_start(CT_FG_ISR_PERIOD_US, g_isr);
    for (uint32_t i = 0; i < FG_N; ++i) {
        check(ct_task_suspend(TASK_A));
        uint32_t now = ct_ts();
        ct_site(CT_SITE_ISR_TASK_WAKE);
        ct_stat_add(&st_first, now - t_start);
        ct_port_trace_poll(); /* every sample: a whole batch's drain outlasts the ISR period at board speed */
    }
    ct_bench_irq_stop();
    if (isr_resume_failed) ct_fail(op_name(0), "resume from the ISR failed");
    if (isr_count != FG_N) ct_fail(op_name(0), "an interrupt found the task not suspended");
    report();
}

static void spin_task(void *arg)
{
    (void)arg;
    for (;;) __asm volatile("nop");
}

/* ---- H: activation jitter under a busy lower-priority task ---------------------------------------------- */
static void h_task(void *arg)
{
    (void)arg;
    uint32_t wake = ct_tick_now(), last = 0;
    for (uint32_t i = 0; i <= FG_N; ++i) { /* FG_N periods between FG_N + 1 activations */
        check(ct_task_delay_until(&wake, (uint32_t)CT_PERIOD_FAST_MS));
        uint32_t now = ct_ts();
        ct_site(CT_SITE_PERIOD_FAST);
        if (i > 0u) ct_stat_add(&st_first, now - last);
        last = now;
        ct_port_trace_poll(); /* every period: the load task never lets the idle task run */
    }
    report();
}

static void load_task(void *arg)
{
    (void)arg;
    for (;;) {
        check(ct_sem_give(SEM_LOAD));
        check(ct_sem_take(SEM_LOAD, CT_WAIT_FOREVER));
        for (volatile uint32_t k = 0; k < (uint32_t)CT_FG_LOAD_SPIN; ++k) {
        }
    }
}

void ct_app_init(void)
{
    if (FG_TEST < 'A' || FG_TEST > 'H' || FG_STR(CT_FG_TEST)[1] != 0) /* folded away for a valid letter */
        ct_check_failed("fg", "CT_FG_TEST must be one letter A .. H", CT_ERR, __FILE__, __LINE__);
    ct_stat_init(&st_first);
    ct_stat_init(&st_second);
    const char *m = op_name(0);
    switch (FG_TEST) {
    case 'B': case 'D': case 'F':
        if (FG_TEST == 'B') CT_CHECK(m, ct_sem_create(SEM, 0u)); /* initially taken */
        if (FG_TEST == 'D') CT_CHECK(m, ct_queue_create(QUEUE, 1u));
        if (FG_TEST == 'F') CT_CHECK(m, ct_pool_create(POOL, POOL_BLOCK_BYTES, POOL_BLOCKS));
        CT_CHECK(m, ct_task_create(TASK_A, "fg_solo", PRIO_A, solo_task, 0, 512u));
        break;
    case 'A': case 'C': case 'E':
        if (FG_TEST == 'C') CT_CHECK(m, ct_sem_create(SEM, 0u));
        if (FG_TEST == 'E') CT_CHECK(m, ct_queue_create(QUEUE, 1u));
        CT_CHECK(m, ct_task_create(TASK_A, "fg_a", PRIO_A, high_task, 0, 512u));
        CT_CHECK(m, ct_task_create(TASK_B, "fg_b", PRIO_B, low_task, 0, 512u));
        break;
    case 'G':
        CT_CHECK(m, ct_task_create(TASK_A, "fg_a", PRIO_A, g_task, 0, 512u));
        CT_CHECK(m, ct_task_create(TASK_B, "fg_spin", PRIO_B, spin_task, 0, 256u));
        break;
    default:
        CT_CHECK(m, ct_sem_create(SEM_LOAD, 0u));
        CT_CHECK(m, ct_task_create(TASK_A, "fg_periodic", PRIO_A, h_task, 0, 512u));
        CT_CHECK(m, ct_task_create(TASK_B, "fg_load", PRIO_LOAD, load_task, 0, 512u));
        break;
    }
}
