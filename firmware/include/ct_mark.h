/* ct_mark.h — the instrumentation hook. ct_site(id) toggles the site's GPIOG pin (one edge) and records
 * one trace event carrying the new pin level (SystemView MARK with the site id / TraceX user event
 * 4096+id), at the same program point: edge k of a pin matches trace marker k of that site.
 * The site -> pin table is ct_sites.h. With CT_TRACE=0 only the pin edge remains. */
#ifndef CT_MARK_H
#define CT_MARK_H

#include "ct_board.h"
#include "ct_port.h"
#include "ct_sites.h"

#ifndef CT_TRACE
#define CT_TRACE 1
#endif

/* Current level of each site's pin (index = site id); a site is driven from one context only. */
extern volatile uint8_t ct_site_level[CT_SITE_COUNT];

/* Site id -> GPIOG pin; folds to a constant for a constant id. */
static inline unsigned ct_site_pin(unsigned id)
{
#define CT_SITE_PIN_CASE(sid, cname, dotted, pin) case sid: return pin;
    switch (id) {
        CT_SITE_TABLE(CT_SITE_PIN_CASE)
    default: return 0u;
    }
#undef CT_SITE_PIN_CASE
}

/* Site id -> dotted name ("ctx.yield"); NULL for an unknown id. */
const char *ct_site_name(unsigned id);

/* Interrupts are masked across the pin store and the trace record, so an interrupt can never land
 * between the two and make one instance of a site longer on one side than on the other; the offset
 * between edge and event is then the same constant for every instance of a site. */
static inline __attribute__((always_inline)) uint32_t ct_site_irq_mask(void)
{
#if defined(__ARM_ARCH)
    uint32_t primask;
    __asm volatile("mrs %0, primask\n cpsid i" : "=r"(primask)::"memory");
    return primask;
#else
    return ct_irq_save();
#endif
}

static inline __attribute__((always_inline)) void ct_site_irq_restore(uint32_t primask)
{
#if defined(__ARM_ARCH)
    __asm volatile("msr primask, %0" ::"r"(primask) : "memory");
#else
    ct_irq_restore(primask);
#endif
}

/* Negative controls (compile-time, default off; issue 12): faults injected on the trace side only, so a
 * cross-validation that cannot see them is shown to be blind. Off, they leave no code and no data.
 *   CT_NEGCTL_DELAY_SITE=<site id> + CT_NEGCTL_DELAY_INSNS=<n>: exactly n `nop`s between that site's pin
 *     store and its trace record, inside the interrupt mask: its trace timestamps are late by n instructions.
 *   CT_NEGCTL_DROP_SITE=<site id> + CT_NEGCTL_DROP_EVERY=<N>: the trace record of every N-th occurrence of
 *     that site (N-th, 2N-th, ...) is skipped; the pin still toggles. */
#ifndef CT_NEGCTL_DELAY_SITE
#define CT_NEGCTL_DELAY_SITE 0
#endif
#ifndef CT_NEGCTL_DELAY_INSNS
#define CT_NEGCTL_DELAY_INSNS 0
#endif
#ifndef CT_NEGCTL_DROP_SITE
#define CT_NEGCTL_DROP_SITE 0
#endif
#ifndef CT_NEGCTL_DROP_EVERY
#define CT_NEGCTL_DROP_EVERY 0
#endif
#define CT_NEGCTL_STR_(x) #x
#define CT_NEGCTL_STR(x) CT_NEGCTL_STR_(x)
_Static_assert(CT_NEGCTL_DELAY_SITE < CT_SITE_COUNT && CT_NEGCTL_DROP_SITE < CT_SITE_COUNT,
               "CT_NEGCTL_*_SITE must be a site id of ct_sites.h");
#if (CT_NEGCTL_DELAY_SITE != 0) != (CT_NEGCTL_DELAY_INSNS != 0)
#error "CT_NEGCTL_DELAY_SITE and CT_NEGCTL_DELAY_INSNS go together (both > 0, or both off)"
#endif
#if (CT_NEGCTL_DROP_SITE != 0) != (CT_NEGCTL_DROP_EVERY != 0)
#error "CT_NEGCTL_DROP_SITE and CT_NEGCTL_DROP_EVERY go together (both > 0, or both off)"
#endif
#if CT_NEGCTL_DROP_EVERY > 0
extern uint32_t ct_negctl_drop_count; /* occurrences of CT_NEGCTL_DROP_SITE since the last dropped record */
#endif

static inline __attribute__((always_inline)) void ct_site(enum ct_site_id id)
{
    uint32_t primask = ct_site_irq_mask();
    unsigned level = (unsigned)(ct_site_level[id] ^= 1u);
    ct_pin_write(ct_site_pin(id), level);
#if CT_TRACE
    /* The same (volatile, empty when off) asm statement at every site, with or without a delay: it keeps
     * the compiler from moving the trace call's argument set-up above the pin store, so the code differs
     * only by the n nops and the delay is exactly n instructions. */
    if (CT_NEGCTL_DELAY_INSNS > 0 && (unsigned)id == CT_NEGCTL_DELAY_SITE)
        __asm volatile(".rept " CT_NEGCTL_STR(CT_NEGCTL_DELAY_INSNS) "\n nop\n .endr");
    else
        __asm volatile("");
#if CT_NEGCTL_DROP_EVERY > 0
    if ((unsigned)id == CT_NEGCTL_DROP_SITE && ++ct_negctl_drop_count >= CT_NEGCTL_DROP_EVERY) {
        ct_negctl_drop_count = 0; /* the pin toggled above; this occurrence gets no trace record */
    } else
#endif
        ct_port_trace_mark((unsigned)id, level);
#endif
    ct_site_irq_restore(primask);
}

#endif
