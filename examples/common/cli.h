/* Command-line values of the example programs (emily_embed,
 * emily_generate): a whole decimal number within bounds, or a number,
 * with nothing left over; false on anything else (the caller prints the
 * usage error). */
#ifndef EMILY_EXAMPLES_CLI_H
#define EMILY_EXAMPLES_CLI_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

static inline bool cli_parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static inline bool cli_parse_int(const char *s, int lo, int hi, int *out) {
    long v;
    if (!cli_parse_long(s, lo, hi, &v)) return false;
    *out = (int)v;
    return true;
}

static inline bool cli_parse_double(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end) return false;
    *out = v;
    return true;
}

#endif
