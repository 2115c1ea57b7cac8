/* Export control. The library is built with -fvisibility=hidden: only
 * declarations marked EMILY_API (the public functions of include/emily)
 * are exported from libemily.so; every other global is internal and
 * carries the second prefix `emi_`. */
#ifndef EMILY_EXPORT_H
#define EMILY_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define EMILY_API __attribute__((visibility("default")))
#else
#define EMILY_API
#endif

#endif
