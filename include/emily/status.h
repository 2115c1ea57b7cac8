/* Status codes and error messages.
 *
 * Every public function returns an emily_status. On failure the
 * thread-local message returned by emily_last_error() names the op, the
 * argument and the offending shapes/types. */
#ifndef EMILY_STATUS_H
#define EMILY_STATUS_H

#include "emily/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum emily_status {
    EMILY_OK = 0,
    EMILY_ERR_ARGUMENT,    /* invalid argument value (bad option, NULL, ...) */
    EMILY_ERR_SHAPE,       /* shapes that do not match or broadcast */
    EMILY_ERR_TYPE,        /* dtype not allowed for this op */
    EMILY_ERR_AXIS,        /* axis out of range or repeated */
    EMILY_ERR_INDEX,       /* index out of range */
    EMILY_ERR_MEMORY,      /* allocation failed */
    EMILY_ERR_DEVICE,      /* device missing or device-side failure */
    EMILY_ERR_UNSUPPORTED, /* op not available on this device (a bug to fix) */
    EMILY_ERR_INTERNAL
} emily_status;

/* The message of the last failure on this thread ("" if none). */
EMILY_API const char *emily_last_error(void);

/* Short name of a status code, e.g. "shape error". */
EMILY_API const char *emily_status_name(emily_status s);

/* Records a formatted message for this thread and returns `code`. */
EMILY_API emily_status emily_error(emily_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif
