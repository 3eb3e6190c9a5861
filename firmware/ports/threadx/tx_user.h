/* tx_user.h — ThreadX configuration for crosstrace (passed to ThreadX's CMake as TX_USER_FILE, so the
 * kernel library and the port see the same options). CT_TRACE=1 (the default) records a TraceX buffer:
 * event trace on, timestamps from the board's counter (ct_ts(): TIM2 at 1 GHz on QEMU, DWT CYCCNT on
 * the F429). Optional execution-change hooks drive a "thread running" pin. Included by C and assembly. */
#ifndef CT_TX_USER_H
#define CT_TX_USER_H

#ifndef CT_TRACE
#define CT_TRACE 1
#endif

/* 1 kHz kernel tick (CT_TICK_HZ); 32 priorities: ct priority p (1 highest .. 31) is ThreadX priority p,
 * the system timer thread keeps priority 0. */
#define TX_TIMER_TICKS_PER_SECOND 1000UL
#define TX_MAX_PRIORITIES 32

/* Fair benchmarking (Thread-Metric's ThreadX settings): no API argument checks (the port checks ids
 * itself), no stack filling; performance-info counters stay off (ThreadX default). */
#define TX_DISABLE_ERROR_CHECKING
#define TX_DISABLE_STACK_FILLING

/* Execution-change notification (opt-in, -DCT_TX_EXEC_PIN=<GPIOG pin>): _tx_execution_thread_enter/exit
 * are called from PendSV on every switch and drive that pin high while a thread runs, low while the
 * scheduler switches or idles. Off by default: the hook call costs ~15 instructions per switch, which
 * would be charged to ThreadX's context-switch time. */
#if defined(CT_TX_EXEC_PIN) && (CT_TX_EXEC_PIN >= 0)
#define TX_ENABLE_EXECUTION_CHANGE_NOTIFY
#endif

#if CT_TRACE
#define TX_ENABLE_EVENT_TRACE
/* TraceX timestamps = the board's timestamp counter, read inline (one load, like the port's default
 * DWT read). board.h is reachable because threadx.cmake gives the kernel the board include paths. */
#ifndef __ASSEMBLER__
#include "board.h"
#define TX_TRACE_TIME_SOURCE ((ULONG)ct_ts())
#endif
#define TX_TRACE_TIME_MASK 0xFFFFFFFFUL
#endif

#endif
