/* tm_ct.h — what a Thread-Metric app (apps/tm_<test>/) tells the porting layer (tm_port_ct.c): its
 * counting threads and their counters, the Thread-Metric service each thread calls once per iteration
 * (the hook that fires the tm.count site every CT_TM_SITE_EVERY iterations), and its interrupt handler.
 * Counting threads are Thread-Metric ids 0 .. nthreads-1 (the reporting thread is id 5 in every test). */
#ifndef TM_CT_H
#define TM_CT_H

enum tm_ct_api {
    TM_CT_API_NONE = 0,
    TM_CT_API_RELINQUISH,
    TM_CT_API_RESUME,
    TM_CT_API_SUSPEND,
    TM_CT_API_SEM_GET,
    TM_CT_API_SEM_PUT,
    TM_CT_API_QUEUE_SEND,
    TM_CT_API_POOL_ALLOC,
    TM_CT_API_CAUSE_INTERRUPT,
};

#define TM_CT_MAX_COUNTING 5

typedef struct {
    const char *test;                                     /* "cooperative", ... (metric prefix tm.<test>) */
    unsigned nthreads;                                    /* counting threads */
    unsigned long *counters[TM_CT_MAX_COUNTING];          /* the upstream counters, by thread id */
    unsigned char iter_api[TM_CT_MAX_COUNTING];           /* the service that marks one iteration */
    unsigned long *isr_counter;                           /* interrupt handler's counter, or 0 */
    unsigned char isr_api;                                /* the service the handler calls once */
    void (*isr_handler)(void);                            /* interrupt tests: called from TIM5 */
    int sampled;                                          /* basic: thread 0 calls no service; a TIM5
                                                             sampler fires tm.count instead */
} tm_ct_app;

extern const tm_ct_app tm_ct_this_app;

#endif
