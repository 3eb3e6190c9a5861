/* tm_app_cooperative.c (app tm_cooperative) — Thread-Metric cooperative scheduling test:
 * the upstream source (tm_cooperative_scheduling_test.c, built from the pinned ThreadX sources) through
 * thread_metric/tm_port_ct.c. This file only describes the test to the port. */
#include "ct_app.h"
#include "tm_ct.h"

void tm_main(void);
extern unsigned long tm_cooperative_thread_0_counter;
extern unsigned long tm_cooperative_thread_1_counter;
extern unsigned long tm_cooperative_thread_2_counter;
extern unsigned long tm_cooperative_thread_3_counter;
extern unsigned long tm_cooperative_thread_4_counter;

const char ct_app_name[] = "tm_cooperative";

const tm_ct_app tm_ct_this_app = {
    .test = "cooperative",
    .nthreads = CT_TM_THREADS,
    .counters = {&tm_cooperative_thread_0_counter,
                 &tm_cooperative_thread_1_counter,
                 &tm_cooperative_thread_2_counter,
                 &tm_cooperative_thread_3_counter,
                 &tm_cooperative_thread_4_counter},
    .iter_api = {TM_CT_API_RELINQUISH, TM_CT_API_RELINQUISH, TM_CT_API_RELINQUISH, TM_CT_API_RELINQUISH,
                 TM_CT_API_RELINQUISH},
    .isr_counter = 0,
    .isr_api = TM_CT_API_NONE,
    .isr_handler = 0,
    .sampled = 0,
};

void ct_app_init(void)
{
    tm_main();
}
