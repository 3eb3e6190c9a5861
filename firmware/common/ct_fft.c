/* ct_fft.c — iterative radix-2 decimation-in-time FFT, N = 256, float. Tables are built once by
 * ct_fft_init() (sinf/cosf) so the timed transform is table lookups and butterflies only. */
#include <math.h>

#include "ct_fft.h"

#define LOG2N 8u

static float tw_re[CT_FFT_N / 2u];
static float tw_im[CT_FFT_N / 2u];
static unsigned char bitrev[CT_FFT_N];

void ct_fft_init(void)
{
    const float two_pi = 6.283185307179586f;
    for (unsigned k = 0; k < CT_FFT_N / 2u; ++k) {
        float a = two_pi * (float)k / (float)CT_FFT_N;
        tw_re[k] = cosf(a);
        tw_im[k] = -sinf(a);
    }
    for (unsigned i = 0; i < CT_FFT_N; ++i) {
        unsigned r = 0;
        for (unsigned b = 0; b < LOG2N; ++b) r |= ((i >> b) & 1u) << (LOG2N - 1u - b);
        bitrev[i] = (unsigned char)r;
    }
}

void ct_fft256(float *re, float *im)
{
    for (unsigned i = 0; i < CT_FFT_N; ++i) {
        unsigned j = bitrev[i];
        if (j > i) {
            float t = re[i]; re[i] = re[j]; re[j] = t;
            t = im[i]; im[i] = im[j]; im[j] = t;
        }
    }
    for (unsigned len = 2u; len <= CT_FFT_N; len <<= 1) {
        unsigned half = len >> 1, step = CT_FFT_N / len;
        for (unsigned start = 0; start < CT_FFT_N; start += len) {
            for (unsigned k = 0; k < half; ++k) {
                float wr = tw_re[k * step], wi = tw_im[k * step];
                unsigned a = start + k, b = a + half;
                float xr = re[b] * wr - im[b] * wi;
                float xi = re[b] * wi + im[b] * wr;
                re[b] = re[a] - xr;
                im[b] = im[a] - xi;
                re[a] += xr;
                im[a] += xi;
            }
        }
    }
}

void ct_rfft256(const float *x, float *re, float *im)
{
    for (unsigned i = 0; i < CT_FFT_N; ++i) {
        re[i] = x[i];
        im[i] = 0.0f;
    }
    ct_fft256(re, im);
}

unsigned ct_fft_peak_bin(const float *re, const float *im)
{
    unsigned best = 1u;
    float best_p = -1.0f;
    for (unsigned k = 1u; k < CT_FFT_N / 2u; ++k) {
        float p = re[k] * re[k] + im[k] * im[k];
        if (p > best_p) {
            best_p = p;
            best = k;
        }
    }
    return best;
}
