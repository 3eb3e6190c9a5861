/* ctx_switch — CT_NTASKS equal-priority tasks yield round-robin. Sites: ctx.yield right before the yield
 * call, ctx.switch_in right after it returns (in the task that now runs). Metric ctx_switch.yield: ticks
 * from the yielding task's timestamp to the next task's timestamp after its own yield returns. A
 * higher-priority coordinator starts the tasks together and reports when all have finished. */
#include "ct_app.h"
#include "ct_mark.h"

#ifndef CT_NTASKS
#define CT_NTASKS 2
#endif
#ifndef CT_ITERATIONS
#define CT_ITERATIONS 200
#endif

#if CT_NTASKS < 2 || CT_NTASKS > (CT_MAX_TASKS - 1)
#error "CT_NTASKS must be 2 .. CT_MAX_TASKS-1"
#endif

#define SEM_START 0
#define SEM_DONE 1
#define PRIO_WORKER 10
#define PRIO_COORD 5

const char ct_app_name[] = "ctx_switch";

static volatile uint32_t last_yield_ts;
static volatile int last_valid;
static volatile int last_task = -1;
static ct_stat st;
static volatile uint32_t order_errors;

static void worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    CT_CHECK("ctx_switch.yield", ct_sem_take(SEM_START, CT_WAIT_FOREVER));
    for (int i = 0; i < CT_ITERATIONS; ++i) {
        last_task = me;
        last_valid = 1;
        last_yield_ts = ct_ts();
        ct_site(CT_SITE_CTX_YIELD);
        CT_CHECK("ctx_switch.yield", ct_task_yield());
        uint32_t now = ct_ts();
        ct_site(CT_SITE_CTX_SWITCH_IN);
        if (last_valid && last_task != me) {
            ct_stat_add(&st, now - last_yield_ts);
            /* round-robin: the task that yielded is our predecessor */
            if (last_task != (me + CT_NTASKS - 1) % CT_NTASKS) order_errors++;
        }
        last_valid = 0;
        /* the workers never let the idle task run: drain the trace outside the measured window */
        if (me == 0 && (i & 31) == 31) ct_port_trace_poll();
    }
    CT_CHECK("ctx_switch.yield", ct_sem_give(SEM_DONE));
    for (;;) CT_CHECK("ctx_switch.yield", ct_task_sleep(1000u)); /* finished: stay out of the way */
}

static void coordinator(void *arg)
{
    (void)arg;
    ct_stat_init(&st);
    /* release all workers at once: they become ready in id order and run round-robin from there */
    for (int i = 0; i < CT_NTASKS; ++i) CT_CHECK("ctx_switch.yield", ct_sem_give(SEM_START));
    for (int i = 0; i < CT_NTASKS; ++i) CT_CHECK("ctx_switch.yield", ct_sem_take(SEM_DONE, 10000u));
    if (order_errors) ct_fail("ctx_switch.yield", "tasks did not run round-robin");
    ct_result("ctx_switch.yield", &st);
    ct_app_finish();
}

void ct_app_init(void)
{
    static const char *names[] = {"yield0", "yield1", "yield2", "yield3", "yield4", "yield5",
                                  "yield6", "yield7", "yield8", "yield9", "yield10"};
    CT_CHECK("ctx_switch.yield", ct_sem_create(SEM_START, 0u));
    CT_CHECK("ctx_switch.yield", ct_sem_create(SEM_DONE, 0u));
    CT_CHECK("ctx_switch.yield", ct_task_create(CT_NTASKS, "coord", PRIO_COORD, coordinator, 0, 512u));
    for (int i = 0; i < CT_NTASKS; ++i)
        CT_CHECK("ctx_switch.yield",
                 ct_task_create(i, names[i], PRIO_WORKER, worker, (void *)(intptr_t)i, 384u));
}
