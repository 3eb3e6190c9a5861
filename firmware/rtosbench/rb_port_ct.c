/* rb_port_ct.c — RTOSBench's porting layer (include/porting_layer.h of CT_DEPS_DIR/RTOSBench) on crosstrace's
 * (ct_port.h + ext/ct_port_ext.h's mutex). Upstream tests run in TRACING mode: each T1/T2 is ct_rb_event(k)
 * (include/trace.h), a site toggle (T1: tm.count; T2: tm.isr for counter 0, tm.report for counter 1) timed by
 * the firmware too. The trace is drained before each T1 (inside no interval); the run ends at the test's
 * CT_RB_REPORTS-th report (0: when a task first suspends itself). README.md: tick, interrupt, defects. */
#include "porting_layer.h"

#include "ct_app.h"
#include "ct_board.h"
#include "ct_mark.h"
#include "ct_port_ext.h"

#ifndef CT_RB_REPORTS
#define CT_RB_REPORTS 1
#endif
#ifndef CT_RB_RETUNE_SYSTICK
#define CT_RB_RETUNE_SYSTICK 0
#endif
#define RB_STACK_WORDS 512u
#define RB_NVIC_ISPR(n) CT_REG(0xE000E200u + 4u * (n))
#define RB_SYST_CSR CT_REG(0xE000E010u)
#define RB_SYST_RVR CT_REG(0xE000E014u)
#define RB_SYST_CVR CT_REG(0xE000E018u)

const char ct_app_name[] = "rtosbench";
no_main_retval_t main(no_main_argument_t args); /* the test's main(), renamed by config.h */

#define RB_STR_(x) #x
#define RB_STR(x) RB_STR_(x)

static no_task_entry_t entries[CT_MAX_TASKS];
/* The firmware's own timing of each counter (CT_RESULT rb.<test>.<name>), paired as the analyzer pairs
 * the sites: a T2 closes the interval of the latest T1 if no T2 came since. jitter: wake-up to wake-up. */
static ct_stat st[2];
static char metric[2][48];
static uint32_t t1_ts, last_wake;
static int t1_open, woke;
static int n_tasks, n_sems, n_mutexes, n_queues, n_reports;
static no_int_handler_t sgi_handler;

static void check(const char *call, ct_status st)
{
    if (st != CT_OK) ct_check_failed("rb", call, st, __FILE__, __LINE__);
}

static const char *counter_name(int c)
{
    const char *t = RB_STR(CT_RB_TEST);
    if (t[0] == 'r') return "switch";                       /* round_robin */
    if (t[0] == 'i') return "latency";                      /* interrupt_processing */
    if (t[0] == 'j') return "period";                       /* jitter: periodic.fast wake-ups */
    return c == 0 ? "unblock" : "block";                    /* mutex, mq, sem: s_to_r, r_to_s */
}

static void name_metrics(void)
{
    for (int c = 0; c < 2; ++c) {
        size_t n = 0;
        for (const char *p = "rb."; *p;) metric[c][n++] = *p++;
        for (const char *p = RB_STR(CT_RB_TEST); *p && n < 30;) metric[c][n++] = *p++;
        metric[c][n++] = '.';
        for (const char *p = counter_name(c); *p && n < sizeof metric[c] - 1;) metric[c][n++] = *p++;
        metric[c][n] = '\0';
        ct_stat_init(&st[c]);
    }
}

static void finish(void)
{
    for (int c = 0; c < 2; ++c)
        if (st[c].n) ct_result(metric[c], &st[c]);
    ct_port_trace_poll(); /* NB_ITER and the tick are in CT_CONFIG's opts (CT_RB_ITER, CT_RB_TICK_HZ) */
    ct_app_finish();
}

/* ---- events: T1 / T2 -------------------------------------------------------------------------------- */
void ct_rb_event(int k)
{
    if ((k & 1) == 0) {
        ct_port_trace_poll(); /* outside every interval: the previous one ended before this T1 */
        t1_open = 1;
        t1_ts = ct_ts();
        ct_site(CT_SITE_TM_COUNT);
    } else {
        uint32_t now = ct_ts();
        ct_site(k == 1 ? CT_SITE_TM_ISR : CT_SITE_TM_REPORT);
        if (t1_open) ct_stat_add(&st[k == 1 ? 0 : 1], now - t1_ts);
        t1_open = 0;
    }
}

void no_tracing_report(void)
{
    if (++n_reports == CT_RB_REPORTS) finish();
}

/* ---- tasks -------------------------------------------------------------------------------------------- */
static void retune_systick(void)
{
#if CT_RB_RETUNE_SYSTICK
    static int done;
    if (done) return;
    done = 1;
    uint32_t st = ct_irq_save();
    RB_SYST_RVR = (RB_SYST_RVR + 1u) * (CT_TICK_HZ / (uint32_t)CT_RB_TICK_HZ) - 1u;
    RB_SYST_CVR = 0u;
    ct_irq_restore(st);
#endif
}

static void task_entry(void *arg)
{
    int i = (int)(intptr_t)arg;
    retune_systick();
    entries[i](NULL);
    for (;;) no_task_suspend_self(); /* a test function returned: keep the task parked */
}

void no_initialize_test(no_task_entry_t init_test_fct)
{
    init_test_fct(NULL); /* in ct_app_init: the tasks it creates start with the scheduler */
}

no_task_handle_t no_create_task(no_task_entry_t task_entry_fn, char task_name[4], unsigned int prio)
{
    no_task_handle_t h = {};
    int id = n_tasks++;
    if (id >= CT_MAX_TASKS) check("no_create_task", CT_ERR);
    entries[id] = task_entry_fn;
    check("ct_task_create", ct_task_create(id, task_name, (int)prio, task_entry, (void *)(intptr_t)id,
                                           RB_STACK_WORDS));
    return h;
}

void no_task_yield(void) { check("ct_task_yield", ct_task_yield()); }

void no_task_suspend_self(void)
{
    if (CT_RB_REPORTS == 0) finish();
    check("ct_task_suspend", ct_task_suspend(ct_task_self()));
}

/* The wake-up after the delay is site periodic.fast (jitter.c's monitor: one activation per tick). */
void no_task_delay(unsigned int nanoseconds)
{
    uint64_t ticks = ((uint64_t)nanoseconds * (uint64_t)CT_RB_TICK_HZ + 999999999u) / 1000000000u;
    check("ct_task_sleep", ct_task_sleep(ticks ? (uint32_t)ticks : 1u));
    uint32_t now = ct_ts();
    ct_site(CT_SITE_PERIOD_FAST);
    if (woke) ct_stat_add(&st[0], now - last_wake);
    woke = 1;
    last_wake = now;
}

/* ---- time: the board timestamp (ns) extended to 64 bits ------------------------------------------------ */
no_time_t no_time_get(void)
{
    static uint32_t last, high;
    uint32_t st = ct_irq_save(), now = ct_ts();
    if (now < last) high++;
    last = now;
    no_time_t t = (no_time_t)(((uint64_t)high << 32) | now);
    ct_irq_restore(st);
    return t;
}

no_time_t no_add_times(const no_time_t *base, unsigned int ticks) { return *base + (no_time_t)ticks; }
long no_time_diff(const no_time_t *t1, const no_time_t *t2) { return (long)(*t2 - *t1); }
void no_cycle_reset_counter(void) {}

/* ---- console ------------------------------------------------------------------------------------------ */
/* Upstream's only text in TRACING mode is "Results are in the trace buffer" per report: not printed (the
 * CT_RESULT lines carry the results, and every UART byte lengthens the pin capture by 87 us). */
void no_serial_write(const char *string) { (void)string; }

static void put_i64(int64_t v)
{
    char buf[24];
    uint64_t u = v < 0 ? (uint64_t)(-(v + 1)) + 1u : (uint64_t)v;
    int n = 0;
    do {
        buf[n++] = (char)('0' + (int)(u % 10u));
        u /= 10u;
    } while (u && n < 22);
    if (v < 0) buf[n++] = '-';
    while (n) ct_putc(buf[--n]);
}

void no_single_result_report(char *prefix, int64_t time)
{
    ct_puts("RB ");
    ct_puts(prefix);
    put_i64(time);
    ct_puts("\r\n");
}

void no_result_report(int64_t max, int64_t min, int64_t average)
{
    no_single_result_report("max=", max);
    no_single_result_report("min=", min);
    no_single_result_report("avg=", average);
}

/* ---- semaphores, mutexes, events, queues ---------------------------------------------------------- */
static int next_id(int *n, int max, const char *what)
{
    if (*n >= max) check(what, CT_ERR);
    return (*n)++;
}

void no_sem_create(no_sem_t *sem, int current_value)
{
    *sem = next_id(&n_sems, CT_MAX_SEMS, "no_sem_create");
    check("ct_sem_create", ct_sem_create(*sem, (unsigned)current_value));
}
void no_sem_wait(no_sem_t *sem) { check("ct_sem_take", ct_sem_take(*sem, CT_WAIT_FOREVER)); }
void no_sem_signal(no_sem_t *sem) { check("ct_sem_give", ct_sem_give(*sem)); }

void no_mutex_create(no_mutex_t *mutex)
{
    *mutex = next_id(&n_mutexes, CT_MAX_MUTEXES, "no_mutex_create");
    check("ct_mutex_create", ct_mutex_create(*mutex));
}
void no_mutex_acquire(no_mutex_t *mutex) { check("ct_mutex_lock", ct_mutex_lock(*mutex, CT_WAIT_FOREVER)); }
void no_mutex_release(no_mutex_t *mutex) { check("ct_mutex_unlock", ct_mutex_unlock(*mutex)); }

/* Events (no test of this campaign uses them): a binary signal on a semaphore. */
void no_event_create(no_event_t *event) { no_sem_create(event, 0); }
void no_event_set(no_event_t *event) { no_sem_signal(event); }
void no_event_wait(no_event_t *event) { no_sem_wait(event); }
void no_event_reset(no_event_t *event) { (void)ct_sem_take(*event, 0u); }

/* A ct queue carries 16-byte messages: the 4-byte int of the test is its first word. */
void no_mq_create(no_mq_t *mq, unsigned int length, unsigned int msgsize)
{
    (void)msgsize;
    *mq = next_id(&n_queues, CT_MAX_QUEUES, "no_mq_create");
    check("ct_queue_create", ct_queue_create(*mq, length));
}

void no_mq_send(no_mq_t *mq, unsigned int msg)
{
    ct_msg m = {{msg, 0u, 0u, 0u}};
    check("ct_queue_send", ct_queue_send(*mq, &m, CT_WAIT_FOREVER));
}

void no_mq_receive(no_mq_t *mq)
{
    ct_msg m;
    check("ct_queue_receive", ct_queue_receive(*mq, &m, CT_WAIT_FOREVER));
}

/* ---- the software-generated interrupt: TIM5's IRQ line, pended at the NVIC by the task ----------------- */
static void sgi_isr(void)
{
    if (sgi_handler) sgi_handler(0, NULL);
}

void no_interrupt_register_sgi_handler(no_int_handler_t fn) { sgi_handler = fn; }

void no_interrupt_enable_sgi(void)
{
    ct_bench_irq_start(1000000u, sgi_isr); /* connects the handler, enables the IRQ at the NVIC ... */
    TIM_CR1(TIM5_BASE) = 0u;                /* ... but the timer itself never runs: only the pend fires it */
    TIM_DIER(TIM5_BASE) = 0u;
}

void no_interrupt_do_sgi(void)
{
    RB_NVIC_ISPR(TIM5_IRQn / 32u) = 1u << (TIM5_IRQn % 32u);
    __asm volatile("dsb\n isb" ::: "memory");
}

void ct_app_init(void)
{
    name_metrics();
    (void)ct_rb_test_main(0);
}
