/* calib — calibration: what one timestamp read, one site and a fixed 2*CT_CALIB_LOOP-instruction loop
 * cost, and the FFT-256 cost with no RTOS in the way. Runs as a single task on every port.
 * Metrics: calib.ts_read, calib.site, calib.loop, fft.duration (all in timestamp ticks). */
#include <math.h>

#include "ct_app.h"
#include "ct_fft.h"
#include "ct_mark.h"

#ifndef CT_ITERATIONS
#define CT_ITERATIONS 100
#endif
#ifndef CT_CALIB_LOOP
#define CT_CALIB_LOOP 1000
#endif
#ifndef CT_FFT_FRAMES
#define CT_FFT_FRAMES 20
#endif

const char ct_app_name[] = "calib";

static float x[CT_FFT_N], re[CT_FFT_N], im[CT_FFT_N];

static void __attribute__((noinline)) spin(uint32_t n)
{
    for (uint32_t i = 0; i < n; ++i) __asm volatile("" ::: "memory");
}

static void calib_task(void *arg)
{
    (void)arg;
    ct_stat s;

    ct_stat_init(&s);
    for (int i = 0; i < CT_ITERATIONS; ++i) {
        uint32_t a = ct_ts();
        uint32_t b = ct_ts();
        ct_stat_add(&s, b - a);
    }
    ct_result("calib.ts_read", &s);

    ct_stat_init(&s);
    for (int i = 0; i < CT_ITERATIONS; ++i) {
        uint32_t a = ct_ts();
        ct_site(CT_SITE_CALIB_LOOP);
        uint32_t b = ct_ts();
        ct_stat_add(&s, b - a);
    }
    ct_result("calib.site", &s);

    ct_stat_init(&s);
    for (int i = 0; i < CT_ITERATIONS; ++i) {
        uint32_t a = ct_ts();
        ct_site(CT_SITE_CALIB_LOOP);
        spin(CT_CALIB_LOOP);
        ct_site(CT_SITE_CALIB_LOOP);
        uint32_t b = ct_ts();
        ct_stat_add(&s, b - a);
    }
    ct_result("calib.loop", &s);

    /* FFT-256 on a synthetic tone at bin 20: same code and input on every port. */
    ct_fft_init();
    for (unsigned i = 0; i < CT_FFT_N; ++i) x[i] = 1000.0f * sinf(6.2831853f * 20.0f * (float)i / (float)CT_FFT_N);
    ct_stat_init(&s);
    int wrong = 0;
    for (int f = 0; f < CT_FFT_FRAMES; ++f) {
        uint32_t a = ct_ts();
        ct_site(CT_SITE_FFT_START);
        ct_rfft256(x, re, im);
        unsigned bin = ct_fft_peak_bin(re, im);
        ct_site(CT_SITE_FFT_STOP);
        uint32_t b = ct_ts();
        ct_stat_add(&s, b - a);
        wrong += (bin != 20u);
    }
    if (wrong) ct_fail("fft.peak", "wrong peak bin");
    ct_result("fft.duration", &s);
    ct_app_finish();
}

void ct_app_init(void)
{
    CT_CHECK("calib", ct_task_create(0, "calib", CT_PRIO_HIGHEST, calib_task, 0, 512u));
}
