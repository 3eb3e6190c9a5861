/* math.h for the Zephyr build of the apps: Zephyr's minimal libc declares no float functions, so this
 * header (found before the libc's on the include path) adds the three the shared FFT code uses. They are
 * linked from the toolchain's libm, the same library the FreeRTOS and ThreadX images use. */
#ifndef CT_ZEPHYR_LIBM_MATH_H
#define CT_ZEPHYR_LIBM_MATH_H

#include_next <math.h>

float sinf(float x);
float cosf(float x);
long lrintf(float x);

#endif
