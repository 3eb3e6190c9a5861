/* ct_port_zephyr.h — between the two halves of the Zephyr port: ct_port_zephyr.c (kernel objects; sees
 * Zephyr's headers) and ct_trace_zephyr.c (recorder glue and end of run; sees crosstrace's board header,
 * whose register names would collide with the STM32 device header Zephyr's kernel headers pull in). */
#ifndef CT_PORT_ZEPHYR_H
#define CT_PORT_ZEPHYR_H

/* Open the trace sink and name the site markers; called by ct_port_start() before app_init(). */
void ct_zephyr_trace_start(void);

/* After a kernel fatal error: CT_DONE with the failure counted, failure pin, exit (QEMU: status 1). */
void ct_zephyr_fatal_done(void) __attribute__((noreturn));

#endif
