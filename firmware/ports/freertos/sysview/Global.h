/* Global.h — the basic types SEGGER's target sources expect (crosstrace's own copy). */
#ifndef GLOBAL_H
#define GLOBAL_H

#define U8 unsigned char
#define I8 signed char
#define U16 unsigned short
#define I16 signed short
#define U32 unsigned long
#define I32 signed long
#define U64 unsigned long long
#define I64 signed long long
#define U64_C(x) x##ULL
#define PTR_ADDR U32

#endif
