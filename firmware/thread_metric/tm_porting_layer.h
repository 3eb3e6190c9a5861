/* tm_porting_layer.h — crosstrace's version of Thread-Metric's per-port header (upstream's is IAR/SVC
 * specific). The upstream test sources include it through tm_api.h; this folder comes first on their
 * include path, so upstream's own copy is never used. Console output goes through tm_ct_printf (the ct
 * UART), and TM_CAUSE_INTERRUPT pends the board's benchmark interrupt (TIM5) instead of an SVC, because
 * both kernels own SVCall. */
#ifndef TM_PORTING_LAYER_H
#define TM_PORTING_LAYER_H

#include <stdio.h>

int tm_ct_printf(const char *fmt, ...);
void tm_ct_cause_interrupt(void);

#define printf tm_ct_printf
#define TM_CAUSE_INTERRUPT tm_ct_cause_interrupt();

#endif
