/* SEGGER_SYSVIEW_Conf.h — crosstrace's SystemView configuration: timestamps from the board counter
 * (TIM2 at 1 GHz on QEMU, where DWT CYCCNT reads 0; DWT CYCCNT on the F429), the up-buffer on RTT channel
 * 1 (named "SysView" by SEGGER_SYSVIEW_Init), task ids shrunk against SRAM at 0x20000000 with shift 2, and
 * a hook that counts dropped packets (ct_sysview.c). */
#ifndef SEGGER_SYSVIEW_CONF_H
#define SEGGER_SYSVIEW_CONF_H

#include "board.h"

#ifndef CT_SV_BUFFER_SIZE
#define CT_SV_BUFFER_SIZE 16384
#endif

#define SEGGER_SYSVIEW_APP_NAME           "crosstrace"
#define SEGGER_SYSVIEW_DEVICE_NAME        "Cortex-M4"
#define SEGGER_SYSVIEW_CORE               2 /* SEGGER_SYSVIEW_CORE_CM3 (M3/M4/M7) */
#define SEGGER_SYSVIEW_GET_TIMESTAMP()    (*(volatile U32 *)(CT_TS_ADDR))
#define SEGGER_SYSVIEW_TIMESTAMP_BITS     32
#define SEGGER_SYSVIEW_RTT_CHANNEL        1
#define SEGGER_SYSVIEW_RTT_BUFFER_SIZE    CT_SV_BUFFER_SIZE
#define SEGGER_SYSVIEW_ID_BASE            0x20000000u
#define SEGGER_SYSVIEW_ID_SHIFT           2
#define SEGGER_SYSVIEW_MAX_STRING_LEN     64
#define SEGGER_SYSVIEW_MAX_ARGUMENTS      8

void ct_sv_on_event_recorded(unsigned num_bytes);
#define SEGGER_SYSVIEW_ON_EVENT_RECORDED(NumBytes) ct_sv_on_event_recorded((unsigned)(NumBytes))

#endif
