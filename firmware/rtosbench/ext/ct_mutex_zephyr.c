/* ct_mutex_zephyr.c — ct_port_ext.h on Zephyr: k_mutex (priority inheritance built in). */
#include <errno.h>
#include <zephyr/kernel.h>

#include "ct_port_ext.h"

static struct k_mutex mutexes[CT_MAX_MUTEXES];
static uint8_t mutex_used[CT_MAX_MUTEXES];

ct_status ct_mutex_create(int id)
{
    if (id < 0 || id >= CT_MAX_MUTEXES || mutex_used[id]) return CT_ERR;
    if (k_mutex_init(&mutexes[id]) != 0) return CT_ERR;
    mutex_used[id] = 1u;
    return CT_OK;
}

ct_status ct_mutex_lock(int id, uint32_t timeout_ticks)
{
    if (id < 0 || id >= CT_MAX_MUTEXES || !mutex_used[id]) return CT_ERR;
    k_timeout_t t = timeout_ticks == CT_WAIT_FOREVER ? K_FOREVER : K_TICKS(timeout_ticks);
    int rc = k_mutex_lock(&mutexes[id], t);
    if (rc == 0) return CT_OK;
    return rc == -EAGAIN ? CT_ERR_TIMEOUT : CT_ERR;
}

ct_status ct_mutex_unlock(int id)
{
    if (id < 0 || id >= CT_MAX_MUTEXES || !mutex_used[id]) return CT_ERR;
    return k_mutex_unlock(&mutexes[id]) == 0 ? CT_OK : CT_ERR;
}
