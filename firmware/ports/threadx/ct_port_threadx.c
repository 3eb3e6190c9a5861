/* ct_port_threadx.c — the porting layer on Eclipse ThreadX (cortex_m4/gnu port), with TraceX recording.
 * Ids index static arrays of native objects; ct priority p is ThreadX priority p. Task stacks, then the
 * TraceX buffer, are carved from the RAM between the linker's _end and the main (ISR) stack. CT_TRACE=1:
 * tracing starts after app_init() (objects are registered), sites are user events 4096+site, the board's
 * ISR wrappers insert ISR enter/exit, and at the end the whole buffer (the .trx image) goes to the sink. */
#include <string.h>

#include "ct_app.h"
#include "ct_board.h"
#include "ct_port.h"
#include "tx_api.h"

#ifndef CT_TX_TRACE_BYTES
#define CT_TX_TRACE_BYTES 0 /* 0: all RAM left after the task stacks */
#endif
#ifndef CT_TX_EXEC_PIN
#define CT_TX_EXEC_PIN (-1)
#endif
#ifndef CT_TX_TRACE_FILTER
#define CT_TX_TRACE_FILTER 0 /* tx_trace_event_filter() mask: ThreadX event groups not recorded */
#endif
#define CT_TX_TRACE_REGISTRY 24u         /* tasks + timer thread + semaphores + queues, with room */
#define CT_TX_DEFAULT_STACK_WORDS 512u
#define CT_TX_QUEUE_DEPTH_MAX 16u
#define CT_TX_TICK_GUARD 256u            /* SysTick counts: see ct_task_delay_until */
#define CT_TX_TRACE_FILE "trace.trx"
#define CT_TX_TRACE_ENTRY_BYTES 32u      /* TX_TRACE_BUFFER_ENTRY: 8 ULONG */

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SCB_SHPR2 (*(volatile uint32_t *)0xE000ED1Cu)
#define SCB_SHPR3 (*(volatile uint32_t *)0xE000ED20u)

/* Kernel internals this port sets up (declared in ThreadX's tx_initialize.h / tx_thread.h). */
extern VOID *_tx_initialize_unused_memory;
extern VOID *_tx_thread_system_stack_ptr;
extern TX_THREAD *_tx_thread_current_ptr;
VOID _tx_timer_interrupt(VOID);
VOID _tx_initialize_low_level(VOID);
extern uint32_t _end, _estack;         /* linker script */
extern const char CT_MAIN_STACK_SIZE[]; /* linker script constant: MSP (ISR) stack at the top of RAM */

static struct {
    TX_THREAD tcb;
    ct_task_fn fn;
    void *arg;
    int used;
} tasks[CT_MAX_TASKS];
/* Free RAM [free_ptr, free_end): task stacks from the bottom, then the trace buffer. */
static uintptr_t free_ptr, free_end;

static struct {
    TX_SEMAPHORE sem;
    int used;
} sems[CT_MAX_SEMS];

static struct {
    TX_QUEUE q;
    ULONG storage[CT_TX_QUEUE_DEPTH_MAX * (sizeof(ct_msg) / sizeof(ULONG))];
    int used;
} queues[CT_MAX_QUEUES];

static void (*app_init_fn)(void);

#if CT_TRACE
/* The TraceX buffer (header, registry, events), written out unchanged as trace.trx. Global so a debugger
 * finds it on the real board: dump binary memory trace.trx ct_tx_trace_buf ct_tx_trace_buf+ct_tx_trace_size */
UCHAR *ct_tx_trace_buf;
ULONG ct_tx_trace_size;
static UINT trace_enable_status = TX_NOT_DONE;
static volatile uint32_t trace_wraps;        /* buffer-full callbacks: one per wrap to the start */
static volatile uint32_t trace_marks_missed; /* site events the recorder refused (tracing off) */

static VOID trace_full(VOID *header)
{
    (void)header;
    trace_wraps++;
}
#endif

/* ---- kernel start --------------------------------------------------------------------------------- */

const char *ct_port_name(void) { return "threadx"; }

#define CT_STR_(x) #x
#define CT_STR(x) CT_STR_(x)
const char *ct_port_version(void)
{
    return CT_STR(THREADX_MAJOR_VERSION) "." CT_STR(THREADX_MINOR_VERSION) "." CT_STR(THREADX_PATCH_VERSION);
}

/* Called by tx_kernel_enter() with interrupts disabled: free memory, system stack, a CT_TICK_HZ SysTick,
 * and SVC/PendSV at the lowest priority. SysTick must stay distinguishable from PendSV with the F4's 4
 * priority bits (ThreadX idles inside PendSV): 0xE0, below the benchmark IRQ (CT_BENCH_IRQ_PRIO 0x60). */
VOID _tx_initialize_low_level(VOID)
{
    __asm volatile("cpsid i" ::: "memory");
    _tx_initialize_unused_memory = (VOID *)&_end;
    _tx_thread_system_stack_ptr = (VOID *)&_estack;
    SYST_CSR = 0u;
    SYST_RVR = CT_BOARD_CPU_HZ / CT_TICK_HZ - 1u;
    SYST_CVR = 0u;
    SCB_SHPR2 = 0xFF000000u; /* SVCall */
    SCB_SHPR3 = 0xE0FF0000u; /* SysTick 0xE0, PendSV 0xFF */
    SYST_CSR = 7u;           /* processor clock, interrupt, enable */
}

void SysTick_Handler(void)
{
    _tx_timer_interrupt();
}

void ct_port_start(void (*app_init)(void))
{
    app_init_fn = app_init;
    free_ptr = ((uintptr_t)&_end + 7u) & ~(uintptr_t)7u;
    free_end = ((uintptr_t)&_estack - (uintptr_t)CT_MAIN_STACK_SIZE) & ~(uintptr_t)7u;
    tx_kernel_enter(); /* never returns */
}

VOID tx_application_define(VOID *first_unused_memory)
{
    (void)first_unused_memory;
    app_init_fn();
#if CT_TRACE
    /* After app_init: tx_trace_enable registers every object created so far (names in the .trx). */
    ULONG size = (ULONG)(free_end - free_ptr);
#if CT_TX_TRACE_BYTES > 0
    size = (ULONG)CT_TX_TRACE_BYTES <= size ? (ULONG)CT_TX_TRACE_BYTES : 0u; /* 0: does not fit, fails below */
#endif
    ct_tx_trace_buf = (UCHAR *)free_ptr;
    ct_tx_trace_size = size;
    free_ptr += size;
    trace_enable_status = size ? tx_trace_enable(ct_tx_trace_buf, size, CT_TX_TRACE_REGISTRY) : TX_SIZE_ERROR;
    if (trace_enable_status == TX_SUCCESS) {
        (void)tx_trace_buffer_full_notify(trace_full);
#if CT_TX_TRACE_FILTER != 0
        (void)tx_trace_event_filter((ULONG)CT_TX_TRACE_FILTER & ~(ULONG)TX_TRACE_USER_EVENTS); /* keep sites */
#endif
    }
#endif
}

/* ---- tasks ---------------------------------------------------------------------------------------- */

static VOID task_entry(ULONG id)
{
    tasks[id].fn(tasks[id].arg);
}

ct_status ct_task_create(int id, const char *name, int prio, ct_task_fn fn, void *arg, unsigned stack_words)
{
    if (id < 0 || id >= CT_MAX_TASKS || tasks[id].used || fn == 0 || prio < CT_PRIO_HIGHEST ||
        prio > CT_PRIO_LOWEST)
        return CT_ERR;
    if (stack_words == 0u) stack_words = CT_TX_DEFAULT_STACK_WORDS;
    ULONG bytes = ((ULONG)stack_words * sizeof(ULONG) + 7u) & ~7u; /* keep 8-byte alignment */
    if (bytes > free_end - free_ptr) return CT_ERR;
    VOID *stack = (VOID *)free_ptr;
    tasks[id].fn = fn;
    tasks[id].arg = arg;
    tasks[id].used = 1;
    UINT st = tx_thread_create(&tasks[id].tcb, (CHAR *)name, task_entry, (ULONG)id, stack, bytes,
                               (UINT)prio, (UINT)prio, TX_NO_TIME_SLICE, TX_AUTO_START);
    if (st != TX_SUCCESS) {
        tasks[id].used = 0;
        return CT_ERR;
    }
    free_ptr += bytes;
    return CT_OK;
}

ct_status ct_task_yield(void)
{
    tx_thread_relinquish();
    return CT_OK;
}

ct_status ct_task_sleep(uint32_t ticks)
{
    return tx_thread_sleep(ticks) == TX_SUCCESS ? CT_OK : CT_ERR;
}

uint32_t ct_tick_now(void) { return (uint32_t)tx_time_get(); }

/* ThreadX has no absolute sleep: sleep (target - now). If the tick interrupt fell between reading the
 * tick and arming the sleep timer, the wake-up would slip one tick, so when SysTick is within
 * CT_TX_TICK_GUARD counts of firing, let it fire first (deterministic, and far longer than that window). */
ct_status ct_task_delay_until(uint32_t *wake, uint32_t period_ticks)
{
    uint32_t target = *wake + period_ticks;
    while (SYST_CVR < CT_TX_TICK_GUARD) {
    }
    int32_t left = (int32_t)(target - (uint32_t)tx_time_get());
    *wake = target;
    if (left <= 0) return CT_OK;
    return tx_thread_sleep((ULONG)left) == TX_SUCCESS ? CT_OK : CT_ERR;
}

/* ---- semaphores ----------------------------------------------------------------------------------- */

static const char *const sem_names[CT_MAX_SEMS] = {"sem0", "sem1", "sem2", "sem3"};

ct_status ct_sem_create(int id, unsigned initial)
{
    if (id < 0 || id >= CT_MAX_SEMS || sems[id].used) return CT_ERR;
    if (tx_semaphore_create(&sems[id].sem, (CHAR *)sem_names[id], initial) != TX_SUCCESS) return CT_ERR;
    sems[id].used = 1;
    return CT_OK;
}

ct_status ct_sem_take(int id, uint32_t timeout_ticks)
{
    if (id < 0 || id >= CT_MAX_SEMS || !sems[id].used) return CT_ERR;
    switch (tx_semaphore_get(&sems[id].sem, timeout_ticks)) { /* CT_WAIT_FOREVER == TX_WAIT_FOREVER */
    case TX_SUCCESS: return CT_OK;
    case TX_NO_INSTANCE: return CT_ERR_TIMEOUT;
    default: return CT_ERR;
    }
}

ct_status ct_sem_give(int id)
{
    if (id < 0 || id >= CT_MAX_SEMS || !sems[id].used) return CT_ERR;
    return tx_semaphore_put(&sems[id].sem) == TX_SUCCESS ? CT_OK : CT_ERR;
}

/* ThreadX services are ISR-safe; the Cortex-M port pends PendSV itself when a higher-priority thread
 * becomes ready, and the switch happens when the ISR returns. */
ct_status ct_sem_give_from_isr(int id)
{
    return ct_sem_give(id);
}

/* ---- queues --------------------------------------------------------------------------------------- */

static const char *const queue_names[CT_MAX_QUEUES] = {"queue0", "queue1", "queue2", "queue3"};

ct_status ct_queue_create(int id, unsigned depth)
{
    if (id < 0 || id >= CT_MAX_QUEUES || queues[id].used || depth == 0u || depth > CT_TX_QUEUE_DEPTH_MAX)
        return CT_ERR;
    if (tx_queue_create(&queues[id].q, (CHAR *)queue_names[id], TX_4_ULONG, queues[id].storage,
                        depth * sizeof(ct_msg)) != TX_SUCCESS)
        return CT_ERR;
    queues[id].used = 1;
    return CT_OK;
}

ct_status ct_queue_send(int id, const ct_msg *msg, uint32_t timeout_ticks)
{
    if (id < 0 || id >= CT_MAX_QUEUES || !queues[id].used) return CT_ERR;
    switch (tx_queue_send(&queues[id].q, (VOID *)(uintptr_t)msg, timeout_ticks)) {
    case TX_SUCCESS: return CT_OK;
    case TX_QUEUE_FULL: return CT_ERR_TIMEOUT;
    default: return CT_ERR;
    }
}

ct_status ct_queue_send_from_isr(int id, const ct_msg *msg)
{
    if (id < 0 || id >= CT_MAX_QUEUES || !queues[id].used) return CT_ERR;
    return tx_queue_send(&queues[id].q, (VOID *)(uintptr_t)msg, TX_NO_WAIT) == TX_SUCCESS ? CT_OK : CT_ERR;
}

ct_status ct_queue_receive(int id, ct_msg *msg, uint32_t timeout_ticks)
{
    if (id < 0 || id >= CT_MAX_QUEUES || !queues[id].used) return CT_ERR;
    switch (tx_queue_receive(&queues[id].q, msg, timeout_ticks)) {
    case TX_SUCCESS: return CT_OK;
    case TX_QUEUE_EMPTY: return CT_ERR_TIMEOUT;
    default: return CT_ERR;
    }
}

/* ---- Thread-Metric additions: suspend/resume, running task, block pools ------------------------------ */

ct_status ct_task_suspend(int id)
{
    if (id < 0 || id >= CT_MAX_TASKS || !tasks[id].used) return CT_ERR;
    return tx_thread_suspend(&tasks[id].tcb) == TX_SUCCESS ? CT_OK : CT_ERR;
}

/* ISR-safe: the Cortex-M port pends PendSV when the resumed thread preempts. */
ct_status ct_task_resume(int id)
{
    if (id < 0 || id >= CT_MAX_TASKS || !tasks[id].used) return CT_ERR;
    UINT st = tx_thread_resume(&tasks[id].tcb);
    return st == TX_SUCCESS || st == TX_SUSPEND_LIFTED ? CT_OK : CT_ERR;
}

int ct_task_self(void)
{
    /* tcb is the first member of tasks[i]: the running thread's id is an offset into the array */
    uintptr_t off = (uintptr_t)_tx_thread_current_ptr - (uintptr_t)&tasks[0];
    return off < sizeof tasks ? (int)(off / sizeof tasks[0]) : -1;
}

#ifndef CT_TX_POOL_BYTES
#define CT_TX_POOL_BYTES 2048u /* per pool, as Thread-Metric's 2048-byte pool */
#endif
static struct {
    TX_BLOCK_POOL pool;
    ULONG storage[CT_TX_POOL_BYTES / sizeof(ULONG)];
    int used;
} pools[CT_MAX_POOLS];
static const char *const pool_names[CT_MAX_POOLS] = {"pool0", "pool1"};

ct_status ct_pool_create(int id, unsigned block_bytes, unsigned nblocks)
{
    if (id < 0 || id >= CT_MAX_POOLS || pools[id].used || block_bytes == 0u || nblocks == 0u) return CT_ERR;
    /* each block carries one pointer of overhead in a ThreadX block pool */
    ULONG bytes = (ULONG)nblocks * (((ULONG)block_bytes + 3u) & ~3u) + (ULONG)nblocks * sizeof(VOID *);
    if (bytes > sizeof pools[id].storage) bytes = sizeof pools[id].storage;
    if (tx_block_pool_create(&pools[id].pool, (CHAR *)pool_names[id], block_bytes, pools[id].storage, bytes) !=
        TX_SUCCESS)
        return CT_ERR;
    pools[id].used = 1;
    return CT_OK;
}

ct_status ct_pool_alloc(int id, void **block)
{
    if (id < 0 || id >= CT_MAX_POOLS || !pools[id].used) return CT_ERR;
    return tx_block_allocate(&pools[id].pool, block, TX_NO_WAIT) == TX_SUCCESS ? CT_OK : CT_ERR;
}

ct_status ct_pool_free(int id, void *block)
{
    if (id < 0 || id >= CT_MAX_POOLS || !pools[id].used || block == 0) return CT_ERR;
    return tx_block_release(block) == TX_SUCCESS ? CT_OK : CT_ERR;
}

/* ---- interrupts and execution-change hooks -------------------------------------------------------- */

/* ISR id in the trace = the IPSR exception number (TIM5 = 66), the id SystemView records too. */
static inline ULONG current_exception(void)
{
    uint32_t ipsr;
    __asm volatile("mrs %0, ipsr" : "=r"(ipsr));
    return ipsr & 0x1FFu;
}

void ct_port_isr_enter(void)
{
#if CT_TRACE
    tx_trace_isr_enter_insert(current_exception());
#endif
}

void ct_port_isr_exit(void)
{
#if CT_TRACE
    tx_trace_isr_exit_insert(current_exception());
#endif
}

#if CT_TX_EXEC_PIN >= 0
/* Called from PendSV (TX_ENABLE_EXECUTION_CHANGE_NOTIFY): the pin is high while a thread runs. */
VOID _tx_execution_initialize(VOID) {}
VOID _tx_execution_thread_enter(VOID) { ct_pin_write(CT_TX_EXEC_PIN, 1u); }
VOID _tx_execution_thread_exit(VOID)
{
    if (_tx_thread_current_ptr != TX_NULL) ct_pin_write(CT_TX_EXEC_PIN, 0u);
}
VOID _tx_execution_isr_enter(VOID) {}
VOID _tx_execution_isr_exit(VOID) {}
#endif

/* ---- trace ---------------------------------------------------------------------------------------- */

void ct_port_trace_mark(unsigned site, unsigned value)
{
#if CT_TRACE
    if (tx_trace_user_event_insert(TX_TRACE_USER_EVENT_START + site, value, 0u, 0u, 0u) != TX_SUCCESS)
        trace_marks_missed++;
#else
    (void)site;
    (void)value;
#endif
}

void ct_port_trace_poll(void) {} /* the buffer is written out once, at the end */

void ct_port_trace_finish(ct_trace_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    stats->file = "";
#if CT_TRACE
    if (trace_enable_status != TX_SUCCESS) {
        ct_info("trace.enable_status", trace_enable_status);
        ct_fail("trace.enable", "tx_trace_enable failed");
        return;
    }
    (void)tx_trace_disable(); /* stops inserting; the header and events stay as they are */
    /* Header words (tracex.md §1): [6] buffer start, [7] buffer end, [8] current (next slot). */
    const ULONG *hdr = (const ULONG *)(const void *)ct_tx_trace_buf;
    ct_info("trace.buffer_bytes", ct_tx_trace_size);
    uint32_t capacity = (uint32_t)((hdr[7] - hdr[6]) / CT_TX_TRACE_ENTRY_BYTES);
    uint32_t used = (uint32_t)((hdr[8] - hdr[6]) / CT_TX_TRACE_ENTRY_BYTES);
    uint32_t wraps = trace_wraps;
    stats->events = wraps * capacity + used;
    stats->dropped = wraps ? stats->events - capacity : 0u; /* overwritten by the circular buffer */
    ct_info("trace.capacity", capacity);
    ct_info("trace.wraps", wraps);
    if (trace_marks_missed) ct_fail("trace.marks", "site events not recorded (tracing off)");
    if (ct_board_trace_open(CT_TX_TRACE_FILE) == 0) {
        if (ct_board_trace_write(ct_tx_trace_buf, ct_tx_trace_size) == 0) {
            stats->bytes = ct_tx_trace_size;
            stats->file = CT_TX_TRACE_FILE;
        } else {
            ct_fail("trace.write", "trace sink write failed");
        }
        ct_board_trace_close();
    }
    /* No sink (real board): dump ct_tx_trace_buf with the debugger (firmware/README.md, ThreadX). */
#endif
}
