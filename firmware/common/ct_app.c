/* ct_app.c — main(), the console contract and the end of a run, shared by every app and port.
 * Boot prints CT_BOOT and CT_CONFIG lines; apps print CT_RESULT/CT_FAIL; ct_app_finish() prints the trace
 * summary and the CT_DONE sentinel, then hands over to the board (status pin, semihosting exit). */
#include "ct_app.h"
#include "ct_board.h"
#include "ct_mark.h"

#ifndef CT_CONFIG_STRING
#define CT_CONFIG_STRING "unknown"
#endif

/* The configuration string twice: in .rodata for printing, and in the non-loaded .ct_config section
 * that host tools read from the ELF without running it (README.md §Image configuration). */
const char ct_config_string[] = CT_CONFIG_STRING;
__attribute__((section(".ct_config"), used)) static const char ct_config_section[] =
    "CT_CONFIG " CT_CONFIG_STRING;

volatile uint8_t ct_site_level[CT_SITE_COUNT];
#if CT_NEGCTL_DROP_EVERY > 0
uint32_t ct_negctl_drop_count;
#endif

static unsigned n_ok, n_fail;

const char *ct_site_name(unsigned id)
{
#define CT_SITE_NAME_CASE(sid, cname, dotted, pin) case sid: return dotted;
    switch (id) {
        CT_SITE_TABLE(CT_SITE_NAME_CASE)
    default: return (const char *)0;
    }
#undef CT_SITE_NAME_CASE
}

/* One console record. Interrupts stay enabled: at 115200 baud a line takes milliseconds on the real board,
 * and masking would delay the tick and the benchmark interrupt. Apps print from one task at a time. */
static void line(const char *s)
{
    ct_puts(s);
    ct_puts("\r\n");
}

void ct_result(const char *metric, const ct_stat *s)
{
    char buf[160];
    if (s->n == 0u) {
        ct_fail(metric, "no samples");
        return;
    }
    ct_fmt_result(buf, sizeof buf, metric, s, "ticks", CT_TS_HZ);
    line(buf);
    n_ok++;
}

void ct_fail(const char *metric, const char *reason)
{
    char buf[200];
    ct_fmt_fail(buf, sizeof buf, metric, reason);
    line(buf);
    n_fail++;
}

void ct_print_kv(const char *tag, const char *key, uint32_t value)
{
    char buf[96], num[12];
    size_t i = 0;
    const char *parts[4] = {tag, " ", key, "="};
    for (int p = 0; p < 4; ++p)
        for (const char *c = parts[p]; *c && i < sizeof buf - 13u; ++c) buf[i++] = *c;
    ct_fmt_u32(num, sizeof num, value);
    for (const char *c = num; *c; ++c) buf[i++] = *c;
    buf[i] = '\0';
    line(buf);
}

void ct_info(const char *key, uint32_t value)
{
    ct_print_kv("CT_INFO", key, value);
}

void ct_check_failed(const char *metric, const char *call, ct_status st, const char *file, int line_no)
{
    char reason[160], num[12];
    size_t i = 0;
    const char *parts[] = {call, " err=", "", " at ", file, ":"};
    for (unsigned p = 0; p < sizeof parts / sizeof parts[0]; ++p) {
        const char *c = parts[p];
        if (p == 2) { /* the (negative) status */
            reason[i++] = '-';
            ct_fmt_u32(num, sizeof num, (uint32_t)(-st));
            c = num;
        }
        for (; *c && i < sizeof reason - 13u; ++c) reason[i++] = *c;
    }
    ct_fmt_u32(num, sizeof num, (uint32_t)line_no);
    for (const char *c = num; *c; ++c) reason[i++] = *c;
    reason[i] = '\0';
    ct_fail(metric, reason);
    ct_app_finish();
}

unsigned ct_app_ok_count(void) { return n_ok; }
unsigned ct_app_fail_count(void) { return n_fail; }

void ct_app_finish(void)
{
    char buf[48];
#if CT_TRACE
    ct_trace_stats ts = {0u, 0u, 0u, ""};
    ct_port_trace_finish(&ts);
    {
        char msg[160];
        size_t i = 0;
        const char *head = "CT_TRACE file=";
        for (const char *c = head; *c; ++c) msg[i++] = *c;
        for (const char *c = ts.file[0] ? ts.file : "-"; *c && i < 60u; ++c) msg[i++] = *c;
        const char *keys[3] = {" events=", " bytes=", " dropped="};
        uint32_t vals[3] = {ts.events, ts.bytes, ts.dropped};
        for (int k = 0; k < 3; ++k) {
            for (const char *c = keys[k]; *c; ++c) msg[i++] = *c;
            i += ct_fmt_u32(msg + i, sizeof msg - i, vals[k]);
        }
        msg[i] = '\0';
        line(msg);
    }
    if (ts.dropped != 0u) {
        char why[40] = "dropped=";
        ct_fmt_u32(why + 8, sizeof why - 8u, ts.dropped);
        ct_fail("trace.overflow", why);
    }
#endif
    ct_fmt_done(buf, sizeof buf, n_ok, n_fail);
    line(buf);
    ct_board_done(n_fail == 0u && n_ok > 0u);
}

int main(void)
{
    ct_board_init();
    ct_puts("\r\n");
    line("CT_BOOT crosstrace");
    {
        char buf[256] = "CT_CONFIG ";
        size_t i = 10;
        for (const char *c = ct_config_string; *c && i < sizeof buf - 1u; ++c) buf[i++] = *c;
        buf[i] = '\0';
        line(buf);
    }
    ct_info("ts_hz", CT_TS_HZ);
    ct_info("cpu_hz", CT_BOARD_CPU_HZ);
    ct_port_start(ct_app_init);
    ct_fail("port.start", "scheduler returned");
    ct_app_finish();
}
