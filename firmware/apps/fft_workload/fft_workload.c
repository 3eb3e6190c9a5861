/* fft_workload — TIM5 at 1 kHz samples ADC1 and sends each sample through a queue (site fft.sample);
 * the FFT task collects 256 samples, runs the 256-point real FFT between sites fft.start/fft.stop and
 * sends the peak through a second queue to the UART task, which prints it (site fft.uart_send).
 * A synthetic tone at bin CT_FFT_TONE_BIN is added to the ADC value so the peak is known (the QEMU ADC
 * returns a ramp; a real board's floating input is noise). Metric fft.duration (ticks per frame). */
#include <math.h>

#include "ct_app.h"
#include "ct_fft.h"
#include "ct_mark.h"

#ifndef CT_FFT_FRAMES
#define CT_FFT_FRAMES 4
#endif
#ifndef CT_FFT_TONE_BIN
#define CT_FFT_TONE_BIN 32
#endif
#define SAMPLE_HZ 1000u
#define Q_SAMPLES 0
#define Q_RESULTS 1

const char ct_app_name[] = "fft_workload";

static int16_t tone[CT_FFT_N];
static float x[CT_FFT_N], re[CT_FFT_N], im[CT_FFT_N];
static volatile uint32_t sample_idx, overruns;
static ct_stat dur;

static void sample_isr(void)
{
    ct_msg m;
    uint32_t i = sample_idx++;
    ct_site(CT_SITE_ADC_SAMPLE);
    m.w[0] = (uint32_t)(2048 + tone[i % CT_FFT_N] + (int)(ct_adc_read() & 0x3Fu));
    m.w[1] = i;
    m.w[2] = m.w[3] = 0u;
    if (ct_queue_send_from_isr(Q_SAMPLES, &m) != CT_OK) overruns++;
}

static void fft_task(void *arg)
{
    (void)arg;
    ct_msg m;
    ct_stat_init(&dur);
    ct_bench_irq_start(1000000u / SAMPLE_HZ, sample_isr);
    for (uint32_t f = 0; f < CT_FFT_FRAMES; ++f) {
        for (unsigned i = 0; i < CT_FFT_N; ++i) {
            CT_CHECK("fft.duration", ct_queue_receive(Q_SAMPLES, &m, 100u));
            x[i] = (float)m.w[0] - 2048.0f;
        }
        if (f + 1u == CT_FFT_FRAMES) ct_bench_irq_stop();
        uint32_t t0 = ct_ts();
        ct_site(CT_SITE_FFT_START);
        ct_rfft256(x, re, im);
        unsigned bin = ct_fft_peak_bin(re, im);
        ct_site(CT_SITE_FFT_STOP);
        uint32_t t1 = ct_ts();
        ct_stat_add(&dur, t1 - t0);
        m.w[0] = f;
        m.w[1] = bin;
        m.w[2] = t1 - t0;
        m.w[3] = 0u;
        CT_CHECK("fft.duration", ct_queue_send(Q_RESULTS, &m, 100u));
    }
    for (;;) CT_CHECK("fft.duration", ct_task_sleep(1000u));
}

static void uart_task(void *arg)
{
    (void)arg;
    ct_msg m;
    unsigned wrong = 0;
    for (uint32_t f = 0; f < CT_FFT_FRAMES; ++f) {
        CT_CHECK("fft.duration", ct_queue_receive(Q_RESULTS, &m, 2000u));
        ct_site(CT_SITE_UART_SEND);
        {
            char line[80] = "CT_FFT frame=";
            size_t n = 13;
            n += ct_fmt_u32(line + n, sizeof line - n, m.w[0]);
            const char *k1 = " peak_bin=";
            for (const char *c = k1; *c; ++c) line[n++] = *c;
            n += ct_fmt_u32(line + n, sizeof line - n, m.w[1]);
            const char *k2 = " peak_hz=";
            for (const char *c = k2; *c; ++c) line[n++] = *c;
            n += ct_fmt_u32(line + n, sizeof line - n, m.w[1] * SAMPLE_HZ / CT_FFT_N);
            line[n] = '\0';
            ct_puts(line); /* blocking UART output: this task is the UART */
            ct_puts("\r\n");
        }
        wrong += (m.w[1] != CT_FFT_TONE_BIN);
    }
    if (overruns) ct_fail("fft.sample", "sample queue overrun");
    if (wrong) ct_fail("fft.peak", "peak not at the tone bin");
    ct_result("fft.duration", &dur);
    ct_app_finish();
}

void ct_app_init(void)
{
    ct_fft_init();
    for (unsigned i = 0; i < CT_FFT_N; ++i)
        tone[i] = (int16_t)lrintf(1000.0f * sinf(6.2831853f * (float)(CT_FFT_TONE_BIN * i % CT_FFT_N) /
                                                 (float)CT_FFT_N));
    CT_CHECK("fft.duration", ct_queue_create(Q_SAMPLES, 16u));
    CT_CHECK("fft.duration", ct_queue_create(Q_RESULTS, 4u));
    CT_CHECK("fft.duration", ct_task_create(0, "fft", 2, fft_task, 0, 512u));
    CT_CHECK("fft.duration", ct_task_create(1, "uart", 3, uart_task, 0, 512u));
}
