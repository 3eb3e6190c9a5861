/* ct_app.h — what every app shares: statistics, the console contract (CT_RESULT / CT_FAIL / CT_DONE lines,
 * firmware/README.md §Console), the compile-time configuration string, and the end of a run.
 * Each app defines ct_app_init() (creates its tasks) and calls ct_app_finish() when done. */
#ifndef CT_APP_H
#define CT_APP_H

#include <stddef.h>
#include <stdint.h>

#include "ct_port.h"

/* Running min/mean/max over unsigned tick deltas. */
typedef struct {
    uint32_t n;
    uint32_t min;
    uint32_t max;
    uint64_t sum;
} ct_stat;

void ct_stat_init(ct_stat *s);
void ct_stat_add(ct_stat *s, uint32_t v);

/* Pure formatting (host-tested): return the number of characters written (without NUL), always
 * NUL-terminated when cap > 0, truncated to cap-1. */
size_t ct_fmt_u32(char *buf, size_t cap, uint32_t v);
size_t ct_fmt_mean(char *buf, size_t cap, uint64_t sum, uint32_t n); /* "<int>.<2 digits>", rounded */
size_t ct_fmt_result(char *buf, size_t cap, const char *metric, const ct_stat *s, const char *unit,
                     uint32_t ts_hz);
size_t ct_fmt_fail(char *buf, size_t cap, const char *metric, const char *reason);
size_t ct_fmt_done(char *buf, size_t cap, unsigned ok, unsigned fail);

/* Console (UART1). */
void ct_result(const char *metric, const ct_stat *s);   /* CT_RESULT line in timestamp ticks */
void ct_fail(const char *metric, const char *reason);   /* CT_FAIL line, counts a failure */
void ct_info(const char *key, uint32_t value);          /* "CT_INFO <key>=<value>" */
void ct_print_kv(const char *tag, const char *key, uint32_t value); /* "<tag> <key>=<value>" */

/* A failed port call ends the run: prints CT_FAIL <metric> <call> err=<code> at <file>:<line>, then the
 * failure sentinel. */
void ct_check_failed(const char *metric, const char *call, ct_status st, const char *file, int line)
    __attribute__((noreturn));
#define CT_CHECK(metric, call)                                                          \
    do {                                                                                \
        ct_status ct_st_ = (call);                                                      \
        if (ct_st_ != CT_OK) ct_check_failed((metric), #call, ct_st_, __FILE__, __LINE__); \
    } while (0)

/* Configuration recorded in the image (also in the .ct_config ELF section). */
extern const char ct_config_string[];

/* Provided by the app. */
void ct_app_init(void);
extern const char ct_app_name[];

/* End of run: trace write-out (CT_TRACE line), CT_DONE ok=<n> fail=<n>, status pin, exit. */
void ct_app_finish(void) __attribute__((noreturn));
unsigned ct_app_ok_count(void);
unsigned ct_app_fail_count(void);

#endif
