/* ct_fmt.c — statistics and console-line formatting, free of any board or RTOS dependency so the host
 * tests (tests/firmware/test_host.py) compile and check exactly this file. No printf: small and exact. */
#include <string.h>

#include "ct_app.h"

void ct_stat_init(ct_stat *s)
{
    s->n = 0u;
    s->min = UINT32_MAX;
    s->max = 0u;
    s->sum = 0u;
}

void ct_stat_add(ct_stat *s, uint32_t v)
{
    s->n++;
    s->sum += v;
    if (v < s->min) s->min = v;
    if (v > s->max) s->max = v;
}

/* Appender that never overruns: writes what fits, always counts what was asked. */
typedef struct {
    char *buf;
    size_t cap;
    size_t len;
} ct_out;

static void out_c(ct_out *o, char c)
{
    if (o->cap > 0u && o->len + 1u < o->cap) o->buf[o->len] = c;
    o->len++;
}

static void out_s(ct_out *o, const char *s)
{
    while (*s) out_c(o, *s++);
}

static void out_u64(ct_out *o, uint64_t v)
{
    char tmp[21];
    int i = 0;
    do {
        tmp[i++] = (char)('0' + (int)(v % 10u));
        v /= 10u;
    } while (v != 0u);
    while (i > 0) out_c(o, tmp[--i]);
}

static size_t out_end(ct_out *o)
{
    if (o->cap > 0u) o->buf[o->len < o->cap ? o->len : o->cap - 1u] = '\0';
    return o->len < o->cap ? o->len : (o->cap ? o->cap - 1u : 0u);
}

static void out_mean(ct_out *o, uint64_t sum, uint32_t n)
{
    if (n == 0u) {
        out_s(o, "0.00");
        return;
    }
    /* round(sum * 100 / n) without overflow for sum < 2^57 */
    uint64_t q = sum / n, r = sum % n;
    uint64_t frac = (r * 100u * 2u + n) / (2u * (uint64_t)n); /* 0..100 */
    if (frac >= 100u) {
        q += 1u;
        frac -= 100u;
    }
    out_u64(o, q);
    out_c(o, '.');
    out_c(o, (char)('0' + (int)(frac / 10u)));
    out_c(o, (char)('0' + (int)(frac % 10u)));
}

size_t ct_fmt_u32(char *buf, size_t cap, uint32_t v)
{
    ct_out o = {buf, cap, 0u};
    out_u64(&o, v);
    return out_end(&o);
}

size_t ct_fmt_mean(char *buf, size_t cap, uint64_t sum, uint32_t n)
{
    ct_out o = {buf, cap, 0u};
    out_mean(&o, sum, n);
    return out_end(&o);
}

size_t ct_fmt_result(char *buf, size_t cap, const char *metric, const ct_stat *s, const char *unit,
                     uint32_t ts_hz)
{
    ct_out o = {buf, cap, 0u};
    out_s(&o, "CT_RESULT ");
    out_s(&o, metric);
    out_s(&o, " n=");
    out_u64(&o, s->n);
    out_s(&o, " min=");
    out_u64(&o, s->n ? s->min : 0u);
    out_s(&o, " mean=");
    out_mean(&o, s->sum, s->n);
    out_s(&o, " max=");
    out_u64(&o, s->max);
    out_s(&o, " unit=");
    out_s(&o, unit);
    out_s(&o, " ts_hz=");
    out_u64(&o, ts_hz);
    return out_end(&o);
}

size_t ct_fmt_fail(char *buf, size_t cap, const char *metric, const char *reason)
{
    ct_out o = {buf, cap, 0u};
    out_s(&o, "CT_FAIL ");
    out_s(&o, metric);
    out_c(&o, ' ');
    for (const char *p = reason; *p; ++p) out_c(&o, (*p == '\n' || *p == '\r') ? ' ' : *p);
    return out_end(&o);
}

size_t ct_fmt_done(char *buf, size_t cap, unsigned ok, unsigned fail)
{
    ct_out o = {buf, cap, 0u};
    out_s(&o, "CT_DONE ok=");
    out_u64(&o, ok);
    out_s(&o, " fail=");
    out_u64(&o, fail);
    return out_end(&o);
}
