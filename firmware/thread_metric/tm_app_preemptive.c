/* tm_app_preemptive.c (app tm_preemptive) — Thread-Metric preemptive scheduling test:
 * the upstream source (tm_preemptive_scheduling_test.c, built from the pinned ThreadX sources) through
 * thread_metric/tm_port_ct.c. This file only describes the test to the port. */
#include "ct_app.h"
#include "tm_ct.h"

void tm_main(void);
extern unsigned long tm_preemptive_thread_0_counter;
extern unsigned long tm_preemptive_thread_1_counter;
extern unsigned long tm_preemptive_thread_2_counter;
extern unsigned long tm_preemptive_thread_3_counter;
extern unsigned long tm_preemptive_thread_4_counter;

const char ct_app_name[] = "tm_preemptive";

const tm_ct_app tm_ct_this_app = {
    .test = "preemptive",
    .nthreads = CT_TM_THREADS,
    .counters = {&tm_preemptive_thread_0_counter,
                 &tm_preemptive_thread_1_counter,
                 &tm_preemptive_thread_2_counter,
                 &tm_preemptive_thread_3_counter,
                 &tm_preemptive_thread_4_counter},
    .iter_api = {TM_CT_API_RESUME, TM_CT_API_SUSPEND, TM_CT_API_SUSPEND, TM_CT_API_SUSPEND,
                 TM_CT_API_SUSPEND},
    .isr_counter = 0,
    .isr_api = TM_CT_API_NONE,
    .isr_handler = 0,
    .sampled = 0,
};

void ct_app_init(void)
{
    tm_main();
}
