/* ct_port_riot.h — the two halves of the RIOT port talk through this header, with plain C types only:
 * ct_port_riot.c includes RIOT's headers (kernel, CMSIS device header), sysview/ct_trace_riot.c crosstrace's
 * board header and SEGGER's; the two register headers must not meet in one translation unit. */
#ifndef CT_PORT_RIOT_H
#define CT_PORT_RIOT_H

#include <stdint.h>

/* trace half (sysview/ct_trace_riot.c); no-ops when CT_TRACE=0 */
void ct_riot_trace_start(void);                /* SystemView init + start, before app_init() */
void ct_riot_trace_task(uint32_t tcb, const char *name, unsigned prio, uint32_t stack_base);
void ct_riot_trace_switch(uint32_t tcb);       /* a thread runs next; 0 = the drain thread (idle) */
void ct_riot_trace_isr_enter(void);
void ct_riot_trace_isr_exit(int to_scheduler);
uint32_t ct_riot_cpu_hz(void);                 /* the board's core clock (SysTick source) */

/* port half (ct_port_riot.c) */
uint32_t ct_tick_now(void);

#endif
