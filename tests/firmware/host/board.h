/* Host stand-in for a board's board.h: pin stores and trace marks are recorded into arrays so the test
 * can check what ct_site() did. Used only by tests/firmware/test_host.py. */
#ifndef CT_HOST_BOARD_H
#define CT_HOST_BOARD_H

#include <stdint.h>

#define CT_BOARD_NAME "host"
#define CT_BOARD_CPU_HZ 1000000u
#define CT_TS_HZ 1000000u

extern unsigned host_pin_log[4096][2];
extern unsigned host_pin_n;

static inline uint32_t ct_ts(void) { return 0u; }
static inline void ct_pin_write(unsigned pin, unsigned level)
{
    host_pin_log[host_pin_n][0] = pin;
    host_pin_log[host_pin_n][1] = level;
    host_pin_n++;
}

#endif
