/* os_cfg_trace.h — sizes for SEGGER's µC/OS SystemView glue (its os_trace_events.h includes this name):
 * task-list entries (ct tasks + timer task) and named resources (semaphores, queues, pools). */
#ifndef OS_CFG_TRACE_H
#define OS_CFG_TRACE_H

#define OS_CFG_TRACE_MAX_TASK      16u
#define OS_CFG_TRACE_MAX_RESOURCES 16u

#endif
