/* isr_latency — a hardware timer interrupt (TIM5) gives a semaphore to a waiting high-priority task.
 * Sites: isr.enter (first thing in the handler) and isr.task_wake (first thing after the take returns).
 * Metric isr.to_task.latency: ticks from the ISR's timestamp read to the task's. On the bare-metal port
 * the "task" is the main loop polling the semaphore (ISR -> main-loop latency). */
#include "ct_app.h"
#include "ct_mark.h"

#ifndef CT_ITERATIONS
#define CT_ITERATIONS 200
#endif
#ifndef CT_ISR_PERIOD_US
#define CT_ISR_PERIOD_US 1000
#endif

#define SEM_IRQ 0

const char ct_app_name[] = "isr_latency";

static volatile uint32_t isr_ts;
static volatile uint32_t isr_count;
static volatile int isr_give_failed;

static void bench_isr(void)
{
    isr_ts = ct_ts();
    ct_site(CT_SITE_ISR_ENTER);
    isr_count++;
    if (ct_sem_give_from_isr(SEM_IRQ) != CT_OK) isr_give_failed = 1;
}

static void waiter_task(void *arg)
{
    (void)arg;
    ct_stat s;
    ct_stat_init(&s);
    ct_bench_irq_start(CT_ISR_PERIOD_US, bench_isr);
    for (int i = 0; i < CT_ITERATIONS; ++i) {
        CT_CHECK("isr.to_task.latency", ct_sem_take(SEM_IRQ, 100u));
        uint32_t now = ct_ts();
        ct_site(CT_SITE_ISR_TASK_WAKE);
        ct_stat_add(&s, now - isr_ts);
    }
    ct_bench_irq_stop();
    if (isr_give_failed) ct_fail("isr.to_task.latency", "ct_sem_give_from_isr failed");
    if (isr_count != (uint32_t)CT_ITERATIONS) ct_fail("isr.to_task.latency", "missed interrupts");
    ct_result("isr.to_task.latency", &s);
    ct_port_trace_poll();
    ct_app_finish();
}

void ct_app_init(void)
{
    CT_CHECK("isr.to_task.latency", ct_sem_create(SEM_IRQ, 0u));
    CT_CHECK("isr.to_task.latency", ct_task_create(0, "isr_wait", CT_PRIO_HIGHEST, waiter_task, 0, 512u));
}
