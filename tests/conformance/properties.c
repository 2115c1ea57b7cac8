#include <stdio.h>
#include <string.h>
#include "properties.h"

bool property_checked_op(const char *op) { (void)op; return false; }
const char *property_description(const char *op) { (void)op; return ""; }
bool property_check(const char *op, const emily_value *args, size_t nargs,
                    const emily_dispatch_result *got, char *msg, size_t msgsize) {
    (void)op; (void)args; (void)nargs; (void)got;
    snprintf(msg, msgsize, "no property check");
    return false;
}
