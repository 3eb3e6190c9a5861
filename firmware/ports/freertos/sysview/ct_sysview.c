/* ct_sysview.c — SystemView recorder glue for the FreeRTOS port: init/start, the task list callback, the
 * site marker packet, draining the RTT "SysView" up-buffer to the board trace sink (QEMU: semihosting file
 * trace.SVDat, raw stream without the ';' header), and counting dropped packets. */
#include <string.h>

#include "FreeRTOS.h"
#include "task.h"

#include "SEGGER_RTT.h"
#include "SEGGER_SYSVIEW.h"
#include "ct_board.h"
#include "ct_port.h"
#include "ct_sites.h"

#define CT_SV_FILE "trace.SVDat"
#define CT_SV_MAX_TASKS (CT_MAX_TASKS + 2)

static struct {
    U32 tcb;
    const char *name;
    U32 prio;
    U32 stack_base;
} sv_tasks[CT_SV_MAX_TASKS];
static unsigned sv_ntasks;
static int sv_file_open;
static U32 sv_events, sv_dropped, sv_bytes, sv_last_wroff = 0xFFFFFFFFu;

/* Called by SEGGER_SYSVIEW after every attempted packet write (under the SystemView lock). A write that
 * succeeded moved the RTT write offset; one that left it unchanged was dropped (buffer full). */
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

void ct_sv_task_created(unsigned long tcb, const char *name, unsigned prio, unsigned long stack_base)
{
    SEGGER_SYSVIEW_OnTaskCreate((U32)tcb);
    if (sv_ntasks < CT_SV_MAX_TASKS) {
        sv_tasks[sv_ntasks].tcb = (U32)tcb;
        sv_tasks[sv_ntasks].name = name;
        sv_tasks[sv_ntasks].prio = prio;
        sv_tasks[sv_ntasks].stack_base = (U32)stack_base;
        send_task_info(sv_ntasks);
        sv_ntasks++;
    }
}

static void cb_send_task_list(void)
{
    for (unsigned i = 0; i < sv_ntasks; ++i) send_task_info(i);
}

static U64 cb_get_time_us(void)
{
    return (U64)xTaskGetTickCount() * (1000000u / configTICK_RATE_HZ);
}

static const SEGGER_SYSVIEW_OS_API os_api = {cb_get_time_us, cb_send_task_list};

static void cb_send_system_desc(void)
{
    SEGGER_SYSVIEW_SendSysDesc("N=crosstrace,D=" CT_BOARD_NAME ",O=FreeRTOS");
    SEGGER_SYSVIEW_SendSysDesc("I#15=SysTick,I#66=TIM5");
}

void ct_sv_start(void)
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

/* Single consumer of the up-buffer, exactly like a J-Link reading RTT: the writer only moves WrOff, we only
 * move RdOff, so no lock is taken and interrupts are never masked by the drain (no added jitter). Only
 * one context may call this at a time (idle hook, or an app's lowest-priority task). */
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
