/* Instrumentation sites: the one fixed site -> id -> pin table shared by firmware, the virtual
 * logic analyzer and the analyzers (which read it back from run.json). Append only.
 * CT_SITE(id, C name, dotted name, GPIOG pin). Each ct_site(id) call toggles its pin once and
 * records one trace event (SystemView Mark / TraceX user event 4096+id) with the new pin level. */
#ifndef CT_SITES_H
#define CT_SITES_H

#define CT_SITE_TABLE(X)                                   \
    X(1, CTX_YIELD,       "ctx.yield",        2)           \
    X(2, CTX_SWITCH_IN,   "ctx.switch_in",    3)           \
    X(3, PERIOD_FAST,     "periodic.fast",    4)           \
    X(4, PERIOD_SLOW,     "periodic.slow",    5)           \
    X(5, ISR_ENTER,       "isr.enter",        6)           \
    X(6, ISR_TASK_WAKE,   "isr.task_wake",    7)           \
    X(7, FFT_START,       "fft.start",        8)           \
    X(8, FFT_STOP,        "fft.stop",         9)           \
    X(9, ADC_SAMPLE,      "fft.sample",      10)           \
    X(10, UART_SEND,      "fft.uart_send",   11)           \
    X(11, CALIB_LOOP,     "calib.loop",      12)           \
    X(12, TM_COUNT,       "tm.count",        15)           \
    X(13, TM_ISR,         "tm.isr",           0)           \
    X(14, TM_REPORT,      "tm.report",        1)

#define CT_SITE_ENUM(id, cname, dotted, pin) CT_SITE_##cname = id,
enum ct_site_id { CT_SITE_NONE = 0, CT_SITE_TABLE(CT_SITE_ENUM) CT_SITE_COUNT };
#undef CT_SITE_ENUM

/* Status pins (not sites): PG13 = run done OK, PG14 = failure. UART1 TX is its own LA channel. */
#define CT_PIN_DONE 13
#define CT_PIN_FAIL 14

#endif
