/* ct_port.h — the RTOS-neutral porting layer every app is written against (Thread-Metric style).
 * Objects are small integer ids backed by static arrays inside the port; every call returns CT_OK or a
 * negative CT_ERR_* code (native status is mapped explicitly, never passed through). No RTOS type appears
 * here. The full contract, function by function, is in ports/ct_port_template.c and firmware/README.md. */
#ifndef CT_PORT_H
#define CT_PORT_H

#include <stdint.h>

typedef int ct_status;
#define CT_OK                 0
#define CT_ERR               (-1) /* the RTOS call failed (bad id, object not created, queue full, ...) */
#define CT_ERR_TIMEOUT       (-2) /* a blocking call with a finite timeout expired */
#define CT_ERR_UNIMPLEMENTED (-3) /* this port does not provide the call (template, bare-metal) */

/* Capacity: ids are 0 .. CT_MAX_<obj>-1. */
#define CT_MAX_TASKS  12
#define CT_MAX_SEMS    4
#define CT_MAX_QUEUES  4

/* Priority convention (Thread-Metric): 1 is the HIGHEST application priority, 31 the lowest. Ports map it
 * onto native priorities (FreeRTOS: configMAX_PRIORITIES-1-(p-1)*..., ThreadX: p). Equal numbers mean equal
 * priority (round-robin on yield). The idle task is below 31. */
#define CT_PRIO_HIGHEST 1
#define CT_PRIO_LOWEST  31

/* Kernel tick: every port runs a 1 kHz tick so delays and periods are in milliseconds. */
#define CT_TICK_HZ 1000u
#define CT_WAIT_FOREVER 0xFFFFFFFFu

/* Fixed message size for queues: four 32-bit words (16 bytes, as Thread-Metric). */
typedef struct {
    uint32_t w[4];
} ct_msg;

typedef void (*ct_task_fn)(void *arg);

/* Lifecycle: ct_port_start() initialises the kernel (and the trace recorder when CT_TRACE=1), calls
 * app_init() (which creates tasks and objects), then starts the scheduler. It does not return. */
void ct_port_start(void (*app_init)(void));
const char *ct_port_name(void);    /* "freertos", "threadx", "baremetal" */
const char *ct_port_version(void); /* RTOS version string, e.g. "V11.1.0+" */

/* Tasks. stack_words: 0 selects the port default. */
ct_status ct_task_create(int id, const char *name, int prio, ct_task_fn fn, void *arg, unsigned stack_words);
ct_status ct_task_yield(void);                    /* give the CPU to the next ready task of equal priority */
ct_status ct_task_sleep(uint32_t ticks);          /* relative delay in kernel ticks */
ct_status ct_task_delay_until(uint32_t *wake, uint32_t period_ticks); /* absolute; *wake updated */
uint32_t ct_tick_now(void);                       /* kernel tick count */

/* Counting semaphores. */
ct_status ct_sem_create(int id, unsigned initial);
ct_status ct_sem_take(int id, uint32_t timeout_ticks);
ct_status ct_sem_give(int id);
ct_status ct_sem_give_from_isr(int id);           /* may request a context switch at ISR exit */

/* Message queues of ct_msg. */
ct_status ct_queue_create(int id, unsigned depth);
ct_status ct_queue_send(int id, const ct_msg *msg, uint32_t timeout_ticks);
ct_status ct_queue_send_from_isr(int id, const ct_msg *msg);
ct_status ct_queue_receive(int id, ct_msg *msg, uint32_t timeout_ticks);

/* Additions for Thread-Metric (thread_metric/tm_port_ct.c): explicit suspend/resume, the running task,
 * fixed-size block pools. ct_task_suspend(id) may be called in app_init (the task then starts suspended);
 * ct_task_resume(id) is ISR-safe (a switch, if needed, happens at ct_port_isr_exit). ct_task_self() is
 * the ct id of the running task, -1 outside ct tasks. Pools: ct_pool_create(id, block_bytes, nblocks);
 * FreeRTOS allocates from its heap (heap_4), ThreadX from a native block pool. */
#define CT_MAX_POOLS 2
ct_status ct_task_suspend(int id);
ct_status ct_task_resume(int id);
int ct_task_self(void);
ct_status ct_pool_create(int id, unsigned block_bytes, unsigned nblocks);
ct_status ct_pool_alloc(int id, void **block);
ct_status ct_pool_free(int id, void *block);

/* Interrupts: the board's ISR wrappers call these around the application handler so the trace shows
 * ISR enter/exit (SystemView RecordEnterISR/ExitISR, ThreadX ISR bookkeeping). */
void ct_port_isr_enter(void);
void ct_port_isr_exit(void);

/* Tracing (CT_TRACE=1): ct_mark.h calls ct_port_trace_mark(); ct_app_finish() calls
 * ct_port_trace_finish(), which writes out what is still buffered and fills *stats. ct_port_trace_poll()
 * drains the recorder's buffer to the board's trace sink at a safe point (idle). */
typedef struct {
    uint32_t events;   /* trace records/packets produced */
    uint32_t bytes;    /* bytes written to the sink */
    uint32_t dropped;  /* records lost because the buffer was full (0 = no overflow) */
    const char *file;  /* trace file name on the host (semihosting), "" if none */
} ct_trace_stats;

void ct_port_trace_mark(unsigned site, unsigned value);
void ct_port_trace_poll(void);
void ct_port_trace_finish(ct_trace_stats *stats);

#endif
