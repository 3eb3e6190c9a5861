/* tm_app_memory.c (app tm_memory) — Thread-Metric memory allocation test:
 * the upstream source (tm_memory_allocation_test.c, built from the pinned ThreadX sources) through
 * thread_metric/tm_port_ct.c. This file only describes the test to the port. */
#include "ct_app.h"
#include "tm_ct.h"

void tm_main(void);
extern unsigned long tm_memory_allocation_counter;

const char ct_app_name[] = "tm_memory";

const tm_ct_app tm_ct_this_app = {
    .test = "memory",
    .nthreads = CT_TM_THREADS,
    .counters = {&tm_memory_allocation_counter},
    .iter_api = {TM_CT_API_POOL_ALLOC},
    .isr_counter = 0,
    .isr_api = TM_CT_API_NONE,
    .isr_handler = 0,
    .sampled = 0,
};

void ct_app_init(void)
{
    tm_main();
}
