/* Devices and streams.
 *
 * A device is a kind plus an index ("cpu", "cuda:0"). Ops run on the
 * device of their inputs and are asynchronous on devices that can be:
 * they enqueue work on the calling thread's current stream for that
 * device and return. Reading bytes back to the host (emily_to_binary)
 * and emily_synchronize are the only points that wait. */
#ifndef EMILY_DEVICE_H
#define EMILY_DEVICE_H

#include <stdbool.h>
#include "emily/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum emily_device_type {
    EMILY_DEVICE_CPU = 0,
    EMILY_DEVICE_CUDA = 1,
    EMILY_DEVICE_TYPE_COUNT
} emily_device_type;

typedef struct emily_device {
    emily_device_type type;
    int index;
} emily_device;

#define EMILY_CPU ((emily_device){EMILY_DEVICE_CPU, 0})

/* Parses "cpu", "cuda", "cuda:N". */
EMILY_API emily_status emily_device_parse(const char *text, emily_device *out);
/* Writes "cpu" or "cuda:N" into buf (always NUL-terminated). */
EMILY_API void emily_device_format(emily_device d, char *buf, size_t size);
EMILY_API bool emily_device_equal(emily_device a, emily_device b);
/* Number of devices of a type present and usable (0 when the engine was
 * not built or no driver/GPU is found). The CPU always has 1. */
EMILY_API int emily_device_count(emily_device_type type);
/* EMILY_OK if the device exists and its engine is usable. */
EMILY_API emily_status emily_device_check(emily_device d);
/* Waits for all work queued on the device by any stream. */
EMILY_API emily_status emily_synchronize(emily_device d);

/* Memory statistics of a device's caching allocator, in bytes. */
typedef struct emily_memory_stats {
    size_t active; /* held by live buffers */
    size_t peak;   /* highest `active` since start or last reset */
    size_t cached; /* freed by buffers, kept for reuse */
} emily_memory_stats;
EMILY_API emily_status emily_memory_stats_get(emily_device d, emily_memory_stats *out);
/* Returns cached memory to the device (cudaFree; host memory to the C
 * allocator) and resets `peak`. */
EMILY_API emily_status emily_memory_release_cache(emily_device d);

/* Streams: each thread has a current stream per device (the device's
 * default stream unless set). A stream owns a device queue; work on
 * different streams may run concurrently. Buffers used across streams
 * are ordered by events recorded by the engine. */
typedef struct emily_stream emily_stream;
EMILY_API emily_status emily_stream_new(emily_device d, emily_stream **out);
EMILY_API emily_status emily_stream_free(emily_stream *s); /* waits for its work */
EMILY_API emily_status emily_stream_synchronize(emily_stream *s);
/* Makes `s` the calling thread's current stream for its device; NULL
 * restores the default stream of `d`. */
EMILY_API emily_status emily_stream_set_current(emily_device d, emily_stream *s);

#ifdef __cplusplus
}
#endif
#endif
