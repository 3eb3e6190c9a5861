/* ct_fft.h — in-tree 256-point FFT for the fft_workload app (radix-2, iterative, float). Chosen over
 * CMSIS-DSP's arm_rfft_fast_f32 so the workload needs no third-party code, builds and is checked against
 * numpy on the host, and costs the same on every RTOS (README.md §FFT). */
#ifndef CT_FFT_H
#define CT_FFT_H

#define CT_FFT_N 256u

void ct_fft_init(void);                                 /* twiddle and bit-reversal tables */
void ct_fft256(float *re, float *im);                   /* in place, forward, no scaling */
/* Real-input transform: x[CT_FFT_N] -> re/im[CT_FFT_N] (imaginary input zero). */
void ct_rfft256(const float *x, float *re, float *im);
/* Bin 1..N/2-1 with the largest |X|^2 (ties: lowest bin). */
unsigned ct_fft_peak_bin(const float *re, const float *im);

#endif
