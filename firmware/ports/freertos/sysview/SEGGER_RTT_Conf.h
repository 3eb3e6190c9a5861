/* SEGGER_RTT_Conf.h — crosstrace's RTT configuration: a tiny terminal channel 0 (unused), the SystemView
 * channel 1 allocated by SEGGER_SYSVIEW_Init, C implementation (no asm), PRIMASK locking. */
#ifndef SEGGER_RTT_CONF_H
#define SEGGER_RTT_CONF_H

#define SEGGER_RTT_MAX_NUM_UP_BUFFERS   2
#define SEGGER_RTT_MAX_NUM_DOWN_BUFFERS 2
#define BUFFER_SIZE_UP                  64
#define BUFFER_SIZE_DOWN                16
#define SEGGER_RTT_PRINTF_BUFFER_SIZE   64
#define SEGGER_RTT_MODE_DEFAULT         SEGGER_RTT_MODE_NO_BLOCK_SKIP
#define RTT_USE_ASM                     0
#define SEGGER_RTT_MEMCPY_USE_BYTELOOP  0

#define SEGGER_RTT_LOCK()                                                   \
    {                                                                       \
        unsigned int _SEGGER_RTT__LockState;                                \
        __asm volatile("mrs %0, primask\n\t"                                \
                       "cpsid i"                                            \
                       : "=r"(_SEGGER_RTT__LockState)::"memory");

#define SEGGER_RTT_UNLOCK()                                                 \
        __asm volatile("msr primask, %0" ::"r"(_SEGGER_RTT__LockState) : "memory"); \
    }

#endif
