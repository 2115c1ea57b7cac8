/* Thread-local error messages. */
#include <stdarg.h>
#include <stdio.h>
#include "core/error_prefix.h"

static _Thread_local char last_message[1024];

const char *emily_last_error(void) { return last_message; }

emily_status emily_error(emily_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_message, sizeof last_message, fmt, ap);
    va_end(ap);
    return code;
}

emily_status emi_verror_prefixed(emily_status code, const char *op, const char *subject, const char *fmt, va_list ap) {
    char msg[sizeof last_message];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (subject) return emily_error(code, "%s: %s: %s", op, subject, msg);
    return emily_error(code, "%s: %s", op, msg);
}

emily_status emi_error_prefixed(emily_status code, const char *op, const char *subject, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emily_status s = emi_verror_prefixed(code, op, subject, fmt, ap);
    va_end(ap);
    return s;
}

const char *emily_status_name(emily_status s) {
    switch (s) {
    case EMILY_OK: return "ok";
    case EMILY_ERR_ARGUMENT: return "argument error";
    case EMILY_ERR_SHAPE: return "shape error";
    case EMILY_ERR_TYPE: return "type error";
    case EMILY_ERR_AXIS: return "axis error";
    case EMILY_ERR_INDEX: return "index error";
    case EMILY_ERR_MEMORY: return "out of memory";
    case EMILY_ERR_DEVICE: return "device error";
    case EMILY_ERR_UNSUPPORTED: return "unsupported";
    case EMILY_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}
