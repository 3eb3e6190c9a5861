/* ct_mutex_threadx.c — ct_port_ext.h on ThreadX: tx_mutex with TX_INHERIT (priority inheritance). */
#include "tx_api.h"

#include "ct_port_ext.h"

static TX_MUTEX mutexes[CT_MAX_MUTEXES];
static uint8_t mutex_used[CT_MAX_MUTEXES];

ct_status ct_mutex_create(int id)
{
    if (id < 0 || id >= CT_MAX_MUTEXES || mutex_used[id]) return CT_ERR;
    if (tx_mutex_create(&mutexes[id], (CHAR *)"ct_mutex", TX_INHERIT) != TX_SUCCESS) return CT_ERR;
    mutex_used[id] = 1u;
    return CT_OK;
}

ct_status ct_mutex_lock(int id, uint32_t timeout_ticks)
{
    if (id < 0 || id >= CT_MAX_MUTEXES || !mutex_used[id]) return CT_ERR;
    ULONG t = timeout_ticks == CT_WAIT_FOREVER ? TX_WAIT_FOREVER : (ULONG)timeout_ticks;
    UINT rc = tx_mutex_get(&mutexes[id], t);
    if (rc == TX_SUCCESS) return CT_OK;
    return rc == TX_NOT_AVAILABLE ? CT_ERR_TIMEOUT : CT_ERR;
}

ct_status ct_mutex_unlock(int id)
{
    if (id < 0 || id >= CT_MAX_MUTEXES || !mutex_used[id]) return CT_ERR;
    return tx_mutex_put(&mutexes[id]) == TX_SUCCESS ? CT_OK : CT_ERR;
}
