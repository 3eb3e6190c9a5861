/* lib_cfg.h — uC-LIB configuration (the template's values; µC/OS-III uses only lib_mem/lib_str basics). */
#ifndef LIB_CFG_MODULE_PRESENT
#define LIB_CFG_MODULE_PRESENT

#define LIB_MEM_CFG_ARG_CHK_EXT_EN          DEF_DISABLED
#define LIB_MEM_CFG_OPTIMIZE_ASM_EN         DEF_DISABLED
#define LIB_MEM_CFG_DBG_INFO_EN             DEF_DISABLED
#define LIB_MEM_CFG_HEAP_SIZE               1024u
#define LIB_MEM_CFG_HEAP_PADDING_ALIGN      LIB_MEM_PADDING_ALIGN_NONE
#define LIB_STR_CFG_FP_EN                   DEF_DISABLED
#define LIB_STR_CFG_FP_MAX_NBR_DIG_SIG      LIB_STR_FP_MAX_NBR_DIG_SIG_DFLT

#endif
