/* ct_mutex_freertos.c — ct_port_ext.h on FreeRTOS: static mutexes (priority inheritance built in). */
#include "FreeRTOS.h"
#include "semphr.h"

#include "ct_port_ext.h"

static StaticSemaphore_t mutex_mem[CT_MAX_MUTEXES];
static SemaphoreHandle_t mutexes[CT_MAX_MUTEXES];

ct_status ct_mutex_create(int id)
{
    if (id < 0 || id >= CT_MAX_MUTEXES || mutexes[id] != NULL) return CT_ERR;
    mutexes[id] = xSemaphoreCreateMutexStatic(&mutex_mem[id]);
    return mutexes[id] != NULL ? CT_OK : CT_ERR;
}

ct_status ct_mutex_lock(int id, uint32_t timeout_ticks)
{
    if (id < 0 || id >= CT_MAX_MUTEXES || mutexes[id] == NULL) return CT_ERR;
    TickType_t t = timeout_ticks == CT_WAIT_FOREVER ? portMAX_DELAY : (TickType_t)timeout_ticks;
    return xSemaphoreTake(mutexes[id], t) == pdTRUE ? CT_OK : CT_ERR_TIMEOUT;
}

ct_status ct_mutex_unlock(int id)
{
    if (id < 0 || id >= CT_MAX_MUTEXES || mutexes[id] == NULL) return CT_ERR;
    return xSemaphoreGive(mutexes[id]) == pdTRUE ? CT_OK : CT_ERR;
}
