/* Streams: the public emily_stream_* API over each engine's stream
 * entries (src/core/engine.h). An emily_stream pairs the device with the
 * engine's own handle; the engine keeps each thread's current stream. */
#include <stdlib.h>
#include "core/engine.h"

struct emily_stream {
    emily_device device;
    void *handle; /* the engine's stream object */
};

static emily_status stream_engine(const char *op, emily_device d, const emily_engine **e) {
    emily_status s = emi_engine_get(d, e);
    if (s) return s;
    if (!(*e)->stream_new || !(*e)->stream_free || !(*e)->stream_synchronize || !(*e)->stream_set_current)
        return emily_error(EMILY_ERR_UNSUPPORTED, "%s: the %s engine has no streams", op, (*e)->name);
    return EMILY_OK;
}

emily_status emily_stream_new(emily_device d, emily_stream **out) {
    if (!out) return emily_error(EMILY_ERR_ARGUMENT, "stream_new: NULL output");
    *out = NULL;
    const emily_engine *e;
    emily_status s = stream_engine("stream_new", d, &e);
    if (s) return s;
    emily_stream *st = malloc(sizeof *st);
    if (!st) return emily_error(EMILY_ERR_MEMORY, "stream_new: out of host memory");
    st->device = d;
    st->handle = NULL;
    s = e->stream_new(d.index, &st->handle);
    if (s) {
        free(st);
        return s;
    }
    *out = st;
    return EMILY_OK;
}

emily_status emily_stream_free(emily_stream *st) {
    if (!st) return EMILY_OK; /* like free(NULL) */
    const emily_engine *e;
    emily_status s = stream_engine("stream_free", st->device, &e);
    if (!s) s = e->stream_free(st->device.index, st->handle);
    /* The handle is gone either way (the engine destroys it even when
     * waiting for its work reported an error), so the wrapper goes too. */
    free(st);
    return s;
}

emily_status emily_stream_synchronize(emily_stream *st) {
    if (!st) return emily_error(EMILY_ERR_ARGUMENT, "stream_synchronize: NULL stream");
    const emily_engine *e;
    emily_status s = stream_engine("stream_synchronize", st->device, &e);
    return s ? s : e->stream_synchronize(st->device.index, st->handle);
}

emily_status emily_stream_set_current(emily_device d, emily_stream *st) {
    const emily_engine *e;
    emily_status s = stream_engine("stream_set_current", d, &e);
    if (s) return s;
    if (st && !emily_device_equal(st->device, d)) {
        char a[32], b[32];
        emily_device_format(st->device, a, sizeof a);
        emily_device_format(d, b, sizeof b);
        return emily_error(EMILY_ERR_DEVICE, "stream_set_current: the stream belongs to %s, not to %s", a, b);
    }
    return e->stream_set_current(d.index, st ? st->handle : NULL);
}
