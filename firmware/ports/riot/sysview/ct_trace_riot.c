/* ct_trace_riot.c — the recorder half of the RIOT port. RIOT has no SystemView support, so the events are
 * made here with SEGGER's SystemView core (configured as for the FreeRTOS port: ports/freertos/sysview
 * headers, TIM2 timestamps on QEMU, RTT "SysView" up-buffer on channel 1): a thread switch from RIOT's
 * sched_cb (task start-exec, or idle for the drain thread), task info with the names RIOT keeps
 * (thread_get_name), ISR enter/exit from the port's interrupt wrappers, the site marks (EX MARK packets),
 * O=RIOT in the system description. Bytes are drained to trace.SVDat (raw stream, no ';' header) by the
 * drain thread and at the end. Includes crosstrace's board header and no RIOT header (ct_port_riot.h). */
#include <stdint.h>
#include <string.h>

#include "ct_board.h"
#include "ct_port.h"
#include "ct_port_riot.h"
#include "ct_sites.h"

uint32_t ct_riot_cpu_hz(void) { return CT_BOARD_CPU_HZ; }

#if CT_TRACE
#include "SEGGER_RTT.h"
#include "SEGGER_SYSVIEW.h"

#define CT_SV_FILE "trace.SVDat"

static struct {
    U32 tcb;
    const char *name;
    U32 prio;
    U32 stack_base;
} sv_tasks[CT_MAX_TASKS];
static unsigned sv_ntasks;
static int sv_file_open;
static U32 sv_events, sv_dropped, sv_bytes, sv_last_wroff = 0xFFFFFFFFu;

/* SEGGER_SYSVIEW_ON_EVENT_RECORDED (SEGGER_SYSVIEW_Conf.h): after every attempted packet write, under the
 * SystemView lock. A write that moved the RTT write offset succeeded; one that did not was dropped. */
void ct_sv_on_event_recorded(unsigned num_bytes)
{
    U32 w = _SEGGER_RTT.aUp[SEGGER_SYSVIEW_RTT_CHANNEL].WrOff;
    (void)num_bytes;
    if (w == sv_last_wroff) sv_dropped++;
    else sv_events++;
    sv_last_wroff = w;
}

static void send_task_info(unsigned i)
{
    SEGGER_SYSVIEW_TASKINFO info;
    memset(&info, 0, sizeof info);
    info.TaskID = sv_tasks[i].tcb;
    info.sName = sv_tasks[i].name;
    info.Prio = sv_tasks[i].prio;
    info.StackBase = sv_tasks[i].stack_base;
    SEGGER_SYSVIEW_SendTaskInfo(&info);
}

void ct_riot_trace_task(uint32_t tcb, const char *name, unsigned prio, uint32_t stack_base)
{
    SEGGER_SYSVIEW_OnTaskCreate(tcb);
    if (sv_ntasks < CT_MAX_TASKS) {
        sv_tasks[sv_ntasks].tcb = tcb;
        sv_tasks[sv_ntasks].name = name ? name : "?";
        sv_tasks[sv_ntasks].prio = prio;
        sv_tasks[sv_ntasks].stack_base = stack_base;
        send_task_info(sv_ntasks);
        sv_ntasks++;
    }
}

void ct_riot_trace_switch(uint32_t tcb)
{
    if (tcb) SEGGER_SYSVIEW_OnTaskStartExec(tcb);
    else SEGGER_SYSVIEW_OnIdle();
}

void ct_riot_trace_isr_enter(void) { SEGGER_SYSVIEW_RecordEnterISR(); }

void ct_riot_trace_isr_exit(int to_scheduler)
{
    if (to_scheduler) SEGGER_SYSVIEW_RecordExitISRToScheduler();
    else SEGGER_SYSVIEW_RecordExitISR();
}

static void cb_send_task_list(void)
{
    for (unsigned i = 0; i < sv_ntasks; ++i) send_task_info(i);
}

static U64 cb_get_time_us(void) { return (U64)ct_tick_now() * (1000000u / CT_TICK_HZ); }

static const SEGGER_SYSVIEW_OS_API os_api = {cb_get_time_us, cb_send_task_list};

static void cb_send_system_desc(void)
{
    SEGGER_SYSVIEW_SendSysDesc("N=crosstrace,D=" CT_BOARD_NAME ",O=RIOT");
    SEGGER_SYSVIEW_SendSysDesc("I#15=SysTick,I#66=TIM5");
}

void ct_riot_trace_start(void)
{
    sv_file_open = (ct_board_trace_open(CT_SV_FILE) == 0);
    SEGGER_SYSVIEW_Init(CT_TS_HZ, CT_BOARD_CPU_HZ, &os_api, cb_send_system_desc);
    SEGGER_SYSVIEW_SetRAMBase(SEGGER_SYSVIEW_ID_BASE);
    SEGGER_SYSVIEW_Start();
#define CT_SV_NAME_SITE(sid, cname, dotted, pin) SEGGER_SYSVIEW_NameMarker(sid, dotted);
    CT_SITE_TABLE(CT_SV_NAME_SITE)
#undef CT_SV_NAME_SITE
}

/* EX(31) MARK packet: sub-id 0, marker id = site, then one extra varint = the new pin level. */
void ct_port_trace_mark(unsigned site, unsigned value)
{
    U8 packet[4 + 4 * 5];
    U8 *p = SEGGER_SYSVIEW_PREPARE_PACKET(packet);
    p = SEGGER_SYSVIEW_EncodeU32(p, SYSVIEW_EVTID_EX_MARK);
    p = SEGGER_SYSVIEW_EncodeU32(p, (U32)site);
    p = SEGGER_SYSVIEW_EncodeU32(p, (U32)value);
    SEGGER_SYSVIEW_SendPacket(packet, p, SYSVIEW_EVTID_EX);
}

/* The single reader of the up-buffer (as a J-Link reading RTT): only RdOff moves here, no lock taken. */
void ct_port_trace_poll(void)
{
    static U8 chunk[512];
    if (!sv_file_open) return;
    for (;;) {
        unsigned n = SEGGER_RTT_ReadUpBufferNoLock(SEGGER_SYSVIEW_RTT_CHANNEL, chunk, sizeof chunk);
        if (n == 0u) break;
        if (ct_board_trace_write(chunk, n) != 0) {
            sv_file_open = 0;
            break;
        }
        sv_bytes += n;
    }
}

void ct_port_trace_finish(ct_trace_stats *stats)
{
    SEGGER_SYSVIEW_Stop();
    ct_port_trace_poll();
    stats->events = sv_events;
    stats->dropped = sv_dropped;
    stats->bytes = sv_bytes;
    stats->file = sv_file_open ? CT_SV_FILE : "";
    ct_board_trace_close();
}

#else /* CT_TRACE=0: pins only */

void ct_riot_trace_start(void) {}
void ct_riot_trace_task(uint32_t tcb, const char *name, unsigned prio, uint32_t stack_base)
{
    (void)tcb; (void)name; (void)prio; (void)stack_base;
}
void ct_riot_trace_switch(uint32_t tcb) { (void)tcb; }
void ct_riot_trace_isr_enter(void) {}
void ct_riot_trace_isr_exit(int to_scheduler) { (void)to_scheduler; }
void ct_port_trace_mark(unsigned site, unsigned value) { (void)site; (void)value; }
void ct_port_trace_poll(void) {}
void ct_port_trace_finish(ct_trace_stats *stats)
{
    stats->events = stats->bytes = stats->dropped = 0u;
    stats->file = "";
}
#endif
