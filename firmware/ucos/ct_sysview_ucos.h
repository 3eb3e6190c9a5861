/* ct_sysview_ucos.h — the µC/OS ports' side of ct_sysview_ucos.c (shared by ports/ucos3 and ports/ucos2). */
#ifndef CT_SYSVIEW_UCOS_H
#define CT_SYSVIEW_UCOS_H

void ct_sv_ucos_start(void);            /* SEGGER_SYSVIEW_Conf + Start, trace file opened, sites named */
void ct_sv_on_event_recorded(unsigned num_bytes);

#endif
