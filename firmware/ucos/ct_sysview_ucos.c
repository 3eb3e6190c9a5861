/* ct_sysview_ucos.c — the SystemView recorder half shared by the µC/OS-III and µC/OS-II ports (CT_TRACE=1).
 * The kernels' own OS_TRACE_* hooks are SEGGER's glue (segger-sysview-ucos: Sample/uCOS-III or uCOS-II,
 * os_trace_events.h + SEGGER_SYSVIEW_uCOS*.c, unchanged); this file adds what the glue leaves to the
 * application: SEGGER_SYSVIEW_Conf() (timestamps = the board counter, TIM2 at 1 GHz on QEMU / DWT on the
 * F429; O=CT_SV_OS_NAME in the system description, TIM5 named), the site markers, draining the RTT
 * "SysView" up-buffer to trace.SVDat through the board's trace sink (raw stream without the ';' header,
 * like the FreeRTOS port), and counting dropped packets. The SystemView/RTT configuration headers are the
 * FreeRTOS port's (ports/freertos/sysview: SEGGER_SYSVIEW_Conf.h, SEGGER_RTT_Conf.h, Global.h). */
#include "SEGGER_RTT.h"
#include "SEGGER_SYSVIEW.h"
#include "ct_board.h"
#include "ct_port.h"
#include "ct_sites.h"
#include "ct_sysview_ucos.h"

#ifndef CT_SV_OS_NAME
#error "CT_SV_OS_NAME (the O= name of the system description) comes from the port's port.cmake"
#endif

#define CT_SV_FILE "trace.SVDat"

extern const SEGGER_SYSVIEW_OS_API SYSVIEW_X_OS_TraceAPI; /* SEGGER's glue: task list, time from the tick */
void SYSVIEW_SendResourceList(void);                      /* SEGGER's glue: names of created objects */

static int sv_file_open;
static volatile U32 sv_events, sv_dropped;
static U32 sv_bytes, sv_last_wroff = 0xFFFFFFFFu;
static volatile int sv_draining;

/* Called by SEGGER_SYSVIEW after every attempted packet write (under the SystemView lock): a write that
 * moved the RTT write offset was stored, one that left it unchanged was dropped (buffer full). */
void ct_sv_on_event_recorded(unsigned num_bytes)
{
    U32 w = _SEGGER_RTT.aUp[SEGGER_SYSVIEW_RTT_CHANNEL].WrOff;
    (void)num_bytes;
    if (w == sv_last_wroff) sv_dropped++;
    else sv_events++;
    sv_last_wroff = w;
}

static void cb_send_system_desc(void)
{
    SEGGER_SYSVIEW_SendSysDesc("N=crosstrace,D=" CT_BOARD_NAME ",O=" CT_SV_OS_NAME);
    SEGGER_SYSVIEW_SendSysDesc("I#15=SysTick,I#66=TIM5");
    SYSVIEW_SendResourceList();
}

/* OS_TRACE_INIT() of SEGGER's os_trace_events.h. */
void SEGGER_SYSVIEW_Conf(void)
{
    SEGGER_SYSVIEW_Init(CT_TS_HZ, CT_BOARD_CPU_HZ, &SYSVIEW_X_OS_TraceAPI, cb_send_system_desc);
    SEGGER_SYSVIEW_SetRAMBase(SEGGER_SYSVIEW_ID_BASE);
}

/* After the kernel's init (its own tasks exist) and before app_init (every ct task's creation is recorded). */
void ct_sv_ucos_start(void)
{
    sv_file_open = (ct_board_trace_open(CT_SV_FILE) == 0);
    SEGGER_SYSVIEW_Conf();
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

/* Single consumer of the up-buffer, like a J-Link reading RTT: no lock, interrupts never masked by the
 * drain. The idle hook and an app task (ctx_switch, periodic load) may both call it; a preempted drain is
 * never re-entered. */
void ct_port_trace_poll(void)
{
    static U8 chunk[512];
    if (!sv_file_open || sv_draining) return;
    sv_draining = 1;
    for (;;) {
        unsigned n = SEGGER_RTT_ReadUpBufferNoLock(SEGGER_SYSVIEW_RTT_CHANNEL, chunk, sizeof chunk);
        if (n == 0u) break;
        if (ct_board_trace_write(chunk, n) != 0) {
            sv_file_open = 0;
            break;
        }
        sv_bytes += n;
    }
    sv_draining = 0;
}

void ct_port_trace_finish(ct_trace_stats *stats)
{
    SEGGER_SYSVIEW_Stop();
    sv_draining = 0; /* the run is over: whoever was draining will not resume */
    ct_port_trace_poll();
    stats->events = sv_events;
    stats->dropped = sv_dropped;
    stats->bytes = sv_bytes;
    stats->file = sv_file_open ? CT_SV_FILE : "";
    ct_board_trace_close();
}
