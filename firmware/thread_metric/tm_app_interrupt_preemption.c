/* tm_app_interrupt_preemption.c (app tm_interrupt_preemption) — Thread-Metric interrupt preemption processing test:
 * the upstream source (tm_interrupt_preemption_processing_test.c, built from the pinned ThreadX sources)
 * through thread_metric/tm_port_ct.c. This file only describes the test to the port. */
#include "ct_app.h"
#include "tm_ct.h"

void tm_main(void);
extern unsigned long tm_interrupt_preemption_thread_0_counter;
extern unsigned long tm_interrupt_preemption_thread_1_counter;
extern unsigned long tm_interrupt_preemption_handler_counter;
void tm_interrupt_preemption_handler(void);

const char ct_app_name[] = "tm_interrupt_preemption";

const tm_ct_app tm_ct_this_app = {
    .test = "interrupt_preemption",
    .nthreads = CT_TM_THREADS,
    .counters = {&tm_interrupt_preemption_thread_0_counter, &tm_interrupt_preemption_thread_1_counter},
    .iter_api = {TM_CT_API_SUSPEND, TM_CT_API_CAUSE_INTERRUPT},
    .isr_counter = &tm_interrupt_preemption_handler_counter,
    .isr_api = TM_CT_API_RESUME,
    .isr_handler = tm_interrupt_preemption_handler,
    .sampled = 0,
};

void ct_app_init(void)
{
    tm_main();
}
