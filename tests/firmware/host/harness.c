/* Host harness for the RTOS-neutral firmware code (ct_fmt.c, ct_fft.c, ct_sites.h + ct_mark.h).
 * Commands (argv[1]):
 *   result <metric> <v>...   print the CT_RESULT line for the values
 *   mean <sum> <n>           print ct_fmt_mean
 *   trunc <cap> <metric> <v>...  ct_fmt_result into a buffer of <cap> bytes: prints "<ret>|<buf>"
 *   fail <metric> <reason>   print the CT_FAIL line;   done <ok> <fail>: the CT_DONE line
 *   fft                      read 256 floats from stdin, print "re im" per bin, then "peak <bin>"
 *   sites                    print "id name pin" for every site in the table
 *   toggle <id> <k>          call ct_site(id) k times; print "pin level" per store and "mark site value" */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_app.h"
#include "ct_fft.h"
#include "ct_mark.h"

unsigned host_pin_log[4096][2];
unsigned host_pin_n;
static unsigned mark_log[4096][2];
static unsigned mark_n;
volatile uint8_t ct_site_level[CT_SITE_COUNT];
#if CT_NEGCTL_DROP_EVERY > 0
uint32_t ct_negctl_drop_count;
#endif

/* Host stand-ins for interrupt masking: ct_site() must hold the mask across pin store and trace mark. */
static unsigned irq_masked;
static unsigned unmasked_marks;

uint32_t ct_irq_save(void)
{
    uint32_t was = irq_masked;
    irq_masked = 1;
    return was;
}

void ct_irq_restore(uint32_t state)
{
    irq_masked = state;
}

void ct_port_trace_mark(unsigned site, unsigned value)
{
    if (!irq_masked)
        unmasked_marks++;
    mark_log[mark_n][0] = site;
    mark_log[mark_n][1] = value;
    mark_n++;
}

const char *ct_site_name(unsigned id)
{
#define NAME_CASE(sid, cname, dotted, pin) case sid: return dotted;
    switch (id) {
        CT_SITE_TABLE(NAME_CASE)
    default: return NULL;
    }
#undef NAME_CASE
}

int main(int argc, char **argv)
{
    char buf[4096];
    if (argc < 2) return 2;
    const char *cmd = argv[1];
    if (!strcmp(cmd, "result") || !strcmp(cmd, "trunc")) {
        int base = !strcmp(cmd, "trunc") ? 3 : 2;
        size_t cap = !strcmp(cmd, "trunc") ? (size_t)strtoul(argv[2], NULL, 10) : sizeof buf;
        ct_stat s;
        ct_stat_init(&s);
        for (int i = base + 1; i < argc; ++i) ct_stat_add(&s, (uint32_t)strtoul(argv[i], NULL, 10));
        char *out = malloc(cap ? cap : 1);
        size_t r = ct_fmt_result(out, cap, argv[base], &s, "ticks", CT_TS_HZ);
        if (!strcmp(cmd, "trunc")) printf("%zu|%s\n", r, cap ? out : "");
        else printf("%s\n", out);
        free(out);
    } else if (!strcmp(cmd, "mean")) {
        ct_fmt_mean(buf, sizeof buf, strtoull(argv[2], NULL, 10), (uint32_t)strtoul(argv[3], NULL, 10));
        printf("%s\n", buf);
    } else if (!strcmp(cmd, "fail")) {
        ct_fmt_fail(buf, sizeof buf, argv[2], argv[3]);
        printf("%s\n", buf);
    } else if (!strcmp(cmd, "done")) {
        ct_fmt_done(buf, sizeof buf, (unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]));
        printf("%s\n", buf);
    } else if (!strcmp(cmd, "fft")) {
        static float x[CT_FFT_N], re[CT_FFT_N], im[CT_FFT_N];
        for (unsigned i = 0; i < CT_FFT_N; ++i)
            if (scanf("%f", &x[i]) != 1) return 3;
        ct_fft_init();
        ct_rfft256(x, re, im);
        for (unsigned i = 0; i < CT_FFT_N; ++i) printf("%.9g %.9g\n", re[i], im[i]);
        printf("peak %u\n", ct_fft_peak_bin(re, im));
    } else if (!strcmp(cmd, "sites")) {
        for (unsigned id = 0; id <= CT_SITE_COUNT; ++id)
            if (ct_site_name(id)) printf("%u %s %u\n", id, ct_site_name(id), ct_site_pin(id));
        printf("count %u\n", (unsigned)CT_SITE_COUNT);
    } else if (!strcmp(cmd, "toggle")) {
        unsigned id = (unsigned)atoi(argv[2]);
        int k = atoi(argv[3]);
        for (int i = 0; i < k; ++i) ct_site((enum ct_site_id)id);
        for (unsigned i = 0; i < host_pin_n; ++i) printf("pin %u %u\n", host_pin_log[i][0], host_pin_log[i][1]);
        for (unsigned i = 0; i < mark_n; ++i) printf("mark %u %u\n", mark_log[i][0], mark_log[i][1]);
        printf("unmasked_marks %u\nmasked_after %u\n", unmasked_marks, irq_masked);
    } else {
        return 2;
    }
    return 0;
}
