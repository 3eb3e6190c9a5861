/* ct_port_ext.h — porting-layer calls RTOSBench needs beyond ct_port.h: a mutex with priority inheritance
 * (FreeRTOS xSemaphoreCreateMutexStatic, ThreadX tx_mutex TX_INHERIT, Zephyr k_mutex). Kept beside the app,
 * not in include/ct_port.h or ports/<rtos>/: those folders are part of every image's source revision, so
 * adding to them would change the ELF of every committed capture. Same contract as ct_port.h: integer ids,
 * CT_OK / CT_ERR, native status mapped explicitly. */
#ifndef CT_PORT_EXT_H
#define CT_PORT_EXT_H

#include "ct_port.h"

#define CT_MAX_MUTEXES 2
ct_status ct_mutex_create(int id);                        /* priority inheritance, initially free */
ct_status ct_mutex_lock(int id, uint32_t timeout_ticks);  /* CT_WAIT_FOREVER or kernel ticks */
ct_status ct_mutex_unlock(int id);                        /* by the owner only */

#endif
