/* tm_app_basic.c (app tm_basic) — Thread-Metric basic processing test:
 * the upstream source (tm_basic_processing_test.c, built from the pinned ThreadX sources) through
 * thread_metric/tm_port_ct.c. This file only describes the test to the port. */
#include "ct_app.h"
#include "tm_ct.h"

void tm_main(void);
extern unsigned long tm_basic_processing_counter;

const char ct_app_name[] = "tm_basic";

const tm_ct_app tm_ct_this_app = {
    .test = "basic",
    .nthreads = CT_TM_THREADS,
    .counters = {&tm_basic_processing_counter},
    .iter_api = {TM_CT_API_NONE},
    .isr_counter = 0,
    .isr_api = TM_CT_API_NONE,
    .isr_handler = 0,
    .sampled = 1,
};

void ct_app_init(void)
{
    tm_main();
}
