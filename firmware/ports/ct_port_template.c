/* ct_port_template.c — the porting-layer contract, function by function (copy to ports/<rtos>/ct_port_<rtos>.c
 * and fill in). Every function returns CT_ERR_UNIMPLEMENTED until written, so an unfinished port fails
 * loudly (the app prints CT_FAIL ... err=-3 and the failure sentinel) instead of returning garbage.
 * A port also provides ports/<rtos>/port.cmake: target ct_rtos (linking the RTOS), CT_RTOS_VERSION, and
 * optionally CT_PORT_APPS (apps it can run). Native status is mapped to CT_OK/CT_ERR*, never passed through. */
#include "ct_board.h"
#include "ct_port.h"

/* "freertos", "threadx", ...: must equal the RTOS= build value. */
const char *ct_port_name(void) { return "template"; }

/* The RTOS version string as the RTOS spells it (recorded in the image configuration). */
const char *ct_port_version(void) { return "unknown"; }

/* Initialise the kernel and, when CT_TRACE=1, the recorder (SystemView: SEGGER_SYSVIEW_Conf + Start;
 * TraceX: tx_trace_enable). Call app_init() before the scheduler runs (it creates tasks and objects),
 * then start the scheduler with a CT_TICK_HZ (1 kHz) tick from SysTick at CT_BOARD_CPU_HZ. Never returns.
 * The port's idle context calls ct_port_trace_poll() and must not execute WFI on qemu_netduinoplus2. */
void ct_port_start(void (*app_init)(void)) { app_init(); }

/* Create task `id` (0..CT_MAX_TASKS-1, each id once) at ct priority prio (1 highest .. 31 lowest; equal
 * numbers = equal native priority, round-robin on yield). stack_words 0 = port default. The task starts
 * when the scheduler runs (or immediately, by priority, if it already runs). */
ct_status ct_task_create(int id, const char *name, int prio, ct_task_fn fn, void *arg, unsigned stack_words)
{
    (void)id; (void)name; (void)prio; (void)fn; (void)arg; (void)stack_words;
    return CT_ERR_UNIMPLEMENTED;
}

/* Let the next ready task of the same priority run (FreeRTOS taskYIELD, ThreadX tx_thread_relinquish). */
ct_status ct_task_yield(void) { return CT_ERR_UNIMPLEMENTED; }

/* Block the calling task for `ticks` kernel ticks. */
ct_status ct_task_sleep(uint32_t ticks) { (void)ticks; return CT_ERR_UNIMPLEMENTED; }

/* Periodic wake-up without drift: *wake is the previous wake tick (initialise it with ct_tick_now());
 * sleep until *wake + period_ticks and store that in *wake (FreeRTOS xTaskDelayUntil semantics). */
ct_status ct_task_delay_until(uint32_t *wake, uint32_t period_ticks) { (void)wake; (void)period_ticks; return CT_ERR_UNIMPLEMENTED; }

/* Kernel tick counter (1 kHz). */
uint32_t ct_tick_now(void) { return 0u; }

/* Counting semaphore `id` (0..CT_MAX_SEMS-1) with an initial count. */
ct_status ct_sem_create(int id, unsigned initial) { (void)id; (void)initial; return CT_ERR_UNIMPLEMENTED; }

/* Take, blocking up to timeout_ticks (CT_WAIT_FOREVER = no limit); CT_ERR_TIMEOUT when it expires. */
ct_status ct_sem_take(int id, uint32_t timeout_ticks) { (void)id; (void)timeout_ticks; return CT_ERR_UNIMPLEMENTED; }

/* Give from task context. */
ct_status ct_sem_give(int id) { (void)id; return CT_ERR_UNIMPLEMENTED; }

/* Give from an ISR (called between ct_port_isr_enter/exit). A woken higher-priority task runs when the
 * ISR returns: request the switch here or remember it for ct_port_isr_exit(). */
ct_status ct_sem_give_from_isr(int id) { (void)id; return CT_ERR_UNIMPLEMENTED; }

/* Queue `id` (0..CT_MAX_QUEUES-1) of `depth` ct_msg (16-byte) messages, FIFO. */
ct_status ct_queue_create(int id, unsigned depth) { (void)id; (void)depth; return CT_ERR_UNIMPLEMENTED; }

/* Send/receive with a timeout in ticks (0 = poll). CT_ERR_TIMEOUT if full/empty when it expires. */
ct_status ct_queue_send(int id, const ct_msg *msg, uint32_t timeout_ticks) { (void)id; (void)msg; (void)timeout_ticks; return CT_ERR_UNIMPLEMENTED; }
ct_status ct_queue_receive(int id, ct_msg *msg, uint32_t timeout_ticks) { (void)id; (void)msg; (void)timeout_ticks; return CT_ERR_UNIMPLEMENTED; }

/* Send from an ISR; never blocks; CT_ERR if the queue is full. */
ct_status ct_queue_send_from_isr(int id, const ct_msg *msg) { (void)id; (void)msg; return CT_ERR_UNIMPLEMENTED; }

/* Thread-Metric additions (thread_metric/tm_port_ct.c). Suspend task `id` (itself included); callable in
 * app_init, where the task then starts suspended. Resume a suspended task, from a task or an ISR (a switch
 * to a higher-priority task happens at once, or at ct_port_isr_exit). */
ct_status ct_task_suspend(int id) { (void)id; return CT_ERR_UNIMPLEMENTED; }
ct_status ct_task_resume(int id) { (void)id; return CT_ERR_UNIMPLEMENTED; }

/* The ct id of the running task; -1 in an ISR before any task runs, or for a task ct did not create. */
int ct_task_self(void) { return -1; }

/* Pool `id` (0..CT_MAX_POOLS-1) of `nblocks` blocks of `block_bytes`; alloc never blocks (CT_ERR when
 * empty); free returns a block to its pool. A kernel without block pools may use its heap. */
ct_status ct_pool_create(int id, unsigned block_bytes, unsigned nblocks) { (void)id; (void)block_bytes; (void)nblocks; return CT_ERR_UNIMPLEMENTED; }
ct_status ct_pool_alloc(int id, void **block) { (void)id; (void)block; return CT_ERR_UNIMPLEMENTED; }
ct_status ct_pool_free(int id, void *block) { (void)id; (void)block; return CT_ERR_UNIMPLEMENTED; }

/* Called by the board's interrupt wrappers (TIM5) first and last: record ISR enter / exit (SystemView
 * RecordEnterISR, ExitISR or ExitISRToScheduler exactly once; ThreadX execution-profile hooks) and
 * perform a pending context switch at exit. */
void ct_port_isr_enter(void) {}
void ct_port_isr_exit(void) {}

/* Record site `site` with `value` (= the new pin level) in the trace: SystemView EX MARK packet
 * (sub-id 0, marker = site, then value), TraceX user event 4096+site with info1 = value. Called right
 * after the pin store, from any context. */
void ct_port_trace_mark(unsigned site, unsigned value) { (void)site; (void)value; }

/* Move buffered trace bytes to the board sink (ct_board_trace_write) if the port streams; safe to call
 * from task context at any time; a no-op for ports that dump a buffer at the end. */
void ct_port_trace_poll(void) {}

/* End of run: stop recording, write out what is buffered (ct_board_trace_open/write/close), and fill
 * *stats (events, bytes, dropped = records lost to a full buffer, file = the host file name). */
void ct_port_trace_finish(ct_trace_stats *stats) { stats->events = stats->bytes = stats->dropped = 0u; stats->file = ""; }
