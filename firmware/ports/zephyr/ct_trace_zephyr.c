/* ct_trace_zephyr.c — the recorder half of the Zephyr port: Zephyr's own tracing subsystem records the
 * kernel events; this file adds the site markers, moves the recorded bytes to the board's trace sink and
 * counts what was lost. It includes crosstrace's board header and no Zephyr kernel header (see
 * ct_port_zephyr.h); Kconfig symbols come from autoconf.h, which Zephyr passes to every file.
 *  - SystemView (CONFIG_SEGGER_SYSTEMVIEW): site = EX MARK packet as on FreeRTOS; the RTT "SysView"
 *    up-buffer is drained to trace.SVDat (raw stream without the ';' header, like the FreeRTOS port).
 *    Linker wraps (firmware/zephyr/CMakeLists.txt): sysview_get_timestamp -> the board timestamp counter
 *    (TIM2, 1 GHz on QEMU), SEGGER_SYSVIEW_Conf -> nothing (Init + Start in ct_zephyr_trace_start, with
 *    that frequency, our system description and SYSTIME in microseconds),
 *    SEGGER_RTT_WriteSkipNoLock -> counts written and refused (dropped) packets.
 *  - CTF (CONFIG_TRACING_CTF, RAM backend): site = named_event {name = dotted site name, arg0 = site id,
 *    arg1 = pin level}; the RAM buffer is written to trace.ctf (the CTF stream; the TSDL metadata is
 *    Zephyr's subsys/tracing/ctf/tsdl/metadata). Linker wrap tracing_format_raw_data -> counts events
 *    and applies the RAM backend's own rule (an event that does not fit is dropped, and so is every later
 *    one), so kept bytes and dropped events are exact. */
#include <stdbool.h>
#include <stdint.h>

#include "ct_app.h"
#include "ct_board.h"
#include "ct_port.h"
#include "ct_port_zephyr.h"
#include "ct_sites.h"

const char *ct_site_name(unsigned id);

#if CT_TRACE && defined(CONFIG_SEGGER_SYSTEMVIEW)
#include "SEGGER_RTT.h"
#include "SEGGER_SYSVIEW.h"

#define CT_SV_FILE "trace.SVDat"
#define CT_SV_CHANNEL CONFIG_SEGGER_SYSVIEW_RTT_CHANNEL
#define CT_SV_RAM_BASE 0x20000000u

static int sv_file_open;
static volatile uint32_t sv_events, sv_dropped;
static uint32_t sv_bytes;
static volatile int sv_draining;

uint32_t __wrap_sysview_get_timestamp(void);
uint32_t __wrap_sysview_get_timestamp(void) { return ct_ts(); }

unsigned __real_SEGGER_RTT_WriteSkipNoLock(unsigned idx, const void *buf, unsigned n);
unsigned __wrap_SEGGER_RTT_WriteSkipNoLock(unsigned idx, const void *buf, unsigned n);
unsigned __wrap_SEGGER_RTT_WriteSkipNoLock(unsigned idx, const void *buf, unsigned n)
{
    unsigned r = __real_SEGGER_RTT_WriteSkipNoLock(idx, buf, n);
    if (idx == CT_SV_CHANNEL) {
        if (r) sv_events++;
        else sv_dropped++;
    }
    return r;
}

static void cb_send_system_desc(void)
{
    SEGGER_SYSVIEW_SendSysDesc("N=crosstrace,D=" CT_BOARD_NAME ",O=Zephyr");
    SEGGER_SYSVIEW_SendSysDesc("I#15=SysTick,I#66=TIM5");
}

/* SystemView time in microseconds (SYSTIME packets): from the same counter as the timestamps. Zephyr's own
 * callback returns k_cycle_get_32(), which is not in microseconds. */
static U64 cb_get_time_us(void)
{
    return (U64)ct_ts() * 1000000u / CT_TS_HZ;
}

extern const SEGGER_SYSVIEW_OS_API SYSVIEW_X_OS_TraceAPI; /* Zephyr's sysview_config.c: the task list */
static SEGGER_SYSVIEW_OS_API os_api;

/* Zephyr calls SEGGER_SYSVIEW_Conf() at POST_KERNEL, before crosstrace's board code has started the
 * timestamp counter: initialising there would anchor the first timestamp delta on a counter that then
 * restarts from 0. Nothing is recorded before SEGGER_SYSVIEW_Start() (BOOT_ENABLE=n), so initialisation
 * moves to ct_zephyr_trace_start(). */
void __wrap_SEGGER_SYSVIEW_Conf(void);
void __wrap_SEGGER_SYSVIEW_Conf(void) {}

/* After ct_board_init() (the timestamp counter runs) and before app_init() (task creation is recorded),
 * exactly as the FreeRTOS port starts its recorder. */
void ct_zephyr_trace_start(void)
{
    os_api.pfGetTime = cb_get_time_us;
    os_api.pfSendTaskList = SYSVIEW_X_OS_TraceAPI.pfSendTaskList;
    sv_file_open = (ct_board_trace_open(CT_SV_FILE) == 0);
    SEGGER_SYSVIEW_Init(CT_TS_HZ, CT_BOARD_CPU_HZ, &os_api, cb_send_system_desc);
    SEGGER_SYSVIEW_SetRAMBase(CT_SV_RAM_BASE);
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
 * drain. The drain thread and an app task (ctx_switch worker, periodic load) may both call this; a
 * preempted drain is never re-entered. */
void ct_port_trace_poll(void)
{
    static U8 chunk[512];
    if (!sv_file_open || sv_draining) return;
    sv_draining = 1;
    for (;;) {
        unsigned n = SEGGER_RTT_ReadUpBufferNoLock(CT_SV_CHANNEL, chunk, sizeof chunk);
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

#elif CT_TRACE && defined(CONFIG_TRACING_CTF)

#define CT_CTF_FILE "trace.ctf"

extern uint8_t ram_tracing[CONFIG_RAM_TRACING_BUFFER_SIZE]; /* Zephyr's tracing_backend_ram.c */
bool is_tracing_enabled(void);                               /* Zephyr's tracing_core.c */
void sys_trace_named_event(const char *name, uint32_t arg0, uint32_t arg1); /* Zephyr's ctf_top.c */

static uint32_t ctf_events, ctf_kept, ctf_dropped;
static bool ctf_full;

void __real_tracing_format_raw_data(uint8_t *data, uint32_t length);
void __wrap_tracing_format_raw_data(uint8_t *data, uint32_t length);
/* Called inside CTF_EVENT's irq_lock: one event per call. */
void __wrap_tracing_format_raw_data(uint8_t *data, uint32_t length)
{
    if (!is_tracing_enabled()) return;
    __real_tracing_format_raw_data(data, length);
    ctf_events++;
    if (!ctf_full && ctf_kept + length <= (uint32_t)CONFIG_RAM_TRACING_BUFFER_SIZE) {
        ctf_kept += length;
    } else {
        ctf_full = true;
        ctf_dropped++;
    }
}

void ct_zephyr_trace_start(void) {}

void ct_port_trace_mark(unsigned site, unsigned value)
{
    const char *name = ct_site_name(site);
    sys_trace_named_event(name ? name : "ct.site", (uint32_t)site, (uint32_t)value);
}

void ct_port_trace_poll(void) {} /* the RAM buffer is written out once, at the end */

void ct_port_trace_finish(ct_trace_stats *stats)
{
    uint32_t primask = ct_irq_save();
    uint32_t kept = ctf_kept; /* later events (the write-out itself) are not part of the run */
    stats->events = ctf_events;
    stats->dropped = ctf_dropped;
    ct_irq_restore(primask);
    stats->bytes = 0u;
    stats->file = "";
    ct_info("trace.buffer_bytes", (uint32_t)CONFIG_RAM_TRACING_BUFFER_SIZE);
    if (ct_board_trace_open(CT_CTF_FILE) == 0) {
        if (ct_board_trace_write(ram_tracing, kept) == 0) {
            stats->bytes = kept;
            stats->file = CT_CTF_FILE;
        } else {
            ct_fail("trace.write", "trace sink write failed");
        }
        ct_board_trace_close();
    }
    /* No sink (real board): dump ram_tracing with the debugger (firmware/README.md, Zephyr). */
}

#else /* CT_TRACE=0: pin edges only */

void ct_zephyr_trace_start(void) {}
void ct_port_trace_mark(unsigned site, unsigned value)
{
    (void)site;
    (void)value;
}
void ct_port_trace_poll(void) {}
void ct_port_trace_finish(ct_trace_stats *stats)
{
    stats->events = stats->bytes = stats->dropped = 0u;
    stats->file = "";
}

#endif

void ct_zephyr_fatal_done(void)
{
    char buf[48];
    ct_fmt_done(buf, sizeof buf, ct_app_ok_count(), ct_app_fail_count());
    ct_puts(buf);
    ct_puts("\r\n");
    ct_board_done(0);
}
