/* tm_app_interrupt.c (app tm_interrupt) — Thread-Metric interrupt processing test:
 * the upstream source (tm_interrupt_processing_test.c, built from the pinned ThreadX sources) through
 * thread_metric/tm_port_ct.c. This file only describes the test to the port. */
#include "ct_app.h"
#include "tm_ct.h"

void tm_main(void);
extern unsigned long tm_interrupt_thread_0_counter;
extern unsigned long tm_interrupt_handler_counter;
void tm_interrupt_handler(void);

const char ct_app_name[] = "tm_interrupt";

const tm_ct_app tm_ct_this_app = {
    .test = "interrupt",
    .nthreads = CT_TM_THREADS,
    .counters = {&tm_interrupt_thread_0_counter},
    .iter_api = {TM_CT_API_CAUSE_INTERRUPT},
    .isr_counter = &tm_interrupt_handler_counter,
    .isr_api = TM_CT_API_SEM_PUT,
    .isr_handler = tm_interrupt_handler,
    .sampled = 0,
};

void ct_app_init(void)
{
    tm_main();
}
