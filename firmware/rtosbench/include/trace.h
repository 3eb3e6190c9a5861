/* trace.h — RTOSBench's TRACING mode on crosstrace's sites. porting_layer.h includes "trace.h" when TRACING
 * is defined and turns WRITE_T1_COUNTER / WRITE_T2_COUNTER into no_tracing_write_event(NO_TEST_ID + k), k
 * counting up from 0 per time counter (T1 even, T2 odd). This header takes upstream's test ids and
 * declarations (tracing/trace.h, found through RTOSBench/include on the include path) and sends each event
 * to ct_rb_event(k), which toggles a site: one pin edge and one trace marker at T1 and at T2. */
#ifndef CT_RB_TRACE_H
#define CT_RB_TRACE_H

#include "../tracing/trace.h"

void ct_rb_event(int k);
#define no_tracing_write_event(ev_id) ct_rb_event((ev_id) - (NO_TEST_ID))

#endif
