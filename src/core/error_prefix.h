/* Failing with a message under a prefix: "<op>: <message>" or
 * "<op>: <subject>: <message>" (the callbacks' argument decoding,
 * src/nx/call_args.c; the GGUF reader, src/io/gguf_open.c; the
 * dispatcher naming a callback, src/nx/dispatch.c). */
#ifndef EMILY_CORE_ERROR_PREFIX_H
#define EMILY_CORE_ERROR_PREFIX_H

#include <stdarg.h>
#include "emily/status.h"

/* Records "<op>: <message>" for this thread, or "<op>: <subject>:
 * <message>" where subject is not NULL, the message formatted from fmt
 * and ap, and returns code. The message is formatted on its own first,
 * so its arguments may point into the message emily_last_error() returns;
 * the whole is cut to what emily_last_error() holds (1023 characters). */
emily_status emi_verror_prefixed(emily_status code, const char *op, const char *subject, const char *fmt, va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 0)))
#endif
    ;

/* emi_verror_prefixed with the message's arguments. */
emily_status emi_error_prefixed(emily_status code, const char *op, const char *subject, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#endif
