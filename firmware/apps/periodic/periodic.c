/* periodic — two tasks activated with delay-until every CT_PERIOD_FAST_MS and CT_PERIOD_SLOW_MS
 * (rate-monotonic priorities) for CT_DURATION_MS; a site at each activation (periodic.fast/.slow).
 * Metrics per task: period between activations and |period - nominal| (jitter), in ticks.
 * CT_LOAD=1 adds a lowest-priority background task that keeps the CPU busy. */
#include "ct_app.h"
#include "ct_mark.h"

#ifndef CT_PERIOD_FAST_MS
#define CT_PERIOD_FAST_MS 10
#endif
#ifndef CT_PERIOD_SLOW_MS
#define CT_PERIOD_SLOW_MS 100
#endif
#ifndef CT_DURATION_MS
#define CT_DURATION_MS 1000
#endif
#ifndef CT_LOAD
#define CT_LOAD 0
#endif

#define SEM_DONE 0

const char ct_app_name[] = "periodic";

typedef struct {
    const char *period_id;
    const char *jitter_id;
    enum ct_site_id site;
    uint32_t period_ms;
    ct_stat period;
    ct_stat jitter;
} periodic_task;

static periodic_task fast = {"periodic.fast.period", "periodic.fast.jitter.abs", CT_SITE_PERIOD_FAST,
                             CT_PERIOD_FAST_MS, {0, 0, 0, 0}, {0, 0, 0, 0}};
static periodic_task slow = {"periodic.slow.period", "periodic.slow.jitter.abs", CT_SITE_PERIOD_SLOW,
                             CT_PERIOD_SLOW_MS, {0, 0, 0, 0}, {0, 0, 0, 0}};
static volatile uint32_t load_rounds;

static void periodic_fn(void *arg)
{
    periodic_task *t = (periodic_task *)arg;
    const uint32_t nominal = (uint32_t)((uint64_t)t->period_ms * CT_TS_HZ / 1000u);
    const uint32_t count = CT_DURATION_MS / t->period_ms;
    uint32_t wake = ct_tick_now(), prev = 0u;
    ct_stat_init(&t->period);
    ct_stat_init(&t->jitter);
    for (uint32_t k = 0; k <= count; ++k) {
        CT_CHECK(t->period_id, ct_task_delay_until(&wake, t->period_ms * CT_TICK_HZ / 1000u));
        uint32_t now = ct_ts();
        ct_site(t->site);
        if (k > 0u) {
            uint32_t p = now - prev;
            ct_stat_add(&t->period, p);
            ct_stat_add(&t->jitter, p > nominal ? p - nominal : nominal - p);
        }
        prev = now;
    }
    CT_CHECK(t->period_id, ct_sem_give(SEM_DONE));
    for (;;) CT_CHECK(t->period_id, ct_task_sleep(1000u));
}

#if CT_LOAD
static void load_fn(void *arg)
{
    (void)arg;
    for (;;) {
        for (volatile uint32_t i = 0; i < 2000u; ++i) {
        }
        load_rounds++;
        ct_port_trace_poll(); /* the idle task never runs under load: drain the trace here */
    }
}
#endif

static void reporter(void *arg)
{
    (void)arg;
    CT_CHECK("periodic", ct_sem_take(SEM_DONE, CT_DURATION_MS * 2u + 1000u));
    CT_CHECK("periodic", ct_sem_take(SEM_DONE, CT_DURATION_MS * 2u + 1000u));
    ct_result(fast.period_id, &fast.period);
    ct_result(fast.jitter_id, &fast.jitter);
    ct_result(slow.period_id, &slow.period);
    ct_result(slow.jitter_id, &slow.jitter);
#if CT_LOAD
    if (load_rounds == 0u) ct_fail("periodic.load", "load task never ran");
    ct_info("load_rounds", load_rounds);
#endif
    ct_app_finish();
}

void ct_app_init(void)
{
    CT_CHECK("periodic", ct_sem_create(SEM_DONE, 0u));
    CT_CHECK("periodic", ct_task_create(0, "reporter", 1, reporter, 0, 512u));
    CT_CHECK("periodic", ct_task_create(1, "fast", 2, periodic_fn, &fast, 384u));
    CT_CHECK("periodic", ct_task_create(2, "slow", 3, periodic_fn, &slow, 384u));
#if CT_LOAD
    CT_CHECK("periodic", ct_task_create(3, "load", CT_PRIO_LOWEST, load_fn, 0, 384u));
#endif
}
