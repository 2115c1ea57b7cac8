/* Device names, engine lookup and device-level entry points. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/engine.h"
#include "emily/emily.h"

const emily_engine *emi_engine_for(emily_device_type type) {
    switch (type) {
    case EMILY_DEVICE_CPU: return emi_cpu_engine();
    case EMILY_DEVICE_CUDA: return emi_cuda_engine();
    default: return NULL;
    }
}

bool emi_engine_has_kernel(const emily_engine *e, emi_kernel k, int op, const emily_dtype *dtypes, int n) {
    (void)op, (void)dtypes, (void)n;
    switch (k) {
// clang-format off
#define HAS_KERNEL(ID, family, entry) \
    case EMI_KERNEL_##ID: return e->family && e->family->entry;
        // clang-format on
        EMI_KERNELS(HAS_KERNEL)
#undef HAS_KERNEL
    default: return false;
    }
}

static const char *type_name(emily_device_type t) {
    return t == EMILY_DEVICE_CPU ? "cpu" : t == EMILY_DEVICE_CUDA ? "cuda" : "?";
}

emily_status emi_engine_get(emily_device d, const emily_engine **out) {
    if ((int)d.type < 0 || d.type >= EMILY_DEVICE_TYPE_COUNT)
        return emily_error(EMILY_ERR_DEVICE, "unknown device type %d", (int)d.type);
    const emily_engine *e = emi_engine_for(d.type);
    if (!e)
        return emily_error(EMILY_ERR_DEVICE, "device %s: this build of libemily has no %s engine", type_name(d.type),
                           type_name(d.type));
    int n = e->device_count();
    if (d.index < 0 || d.index >= n)
        return emily_error(EMILY_ERR_DEVICE, "device %s:%d not found (%d present)", type_name(d.type), d.index, n);
    *out = e;
    return EMILY_OK;
}

emily_status emily_device_parse(const char *text, emily_device *out) {
    if (!text || !out) return emily_error(EMILY_ERR_ARGUMENT, "device_parse: NULL argument");
    if (strcmp(text, "cpu") == 0) {
        *out = EMILY_CPU;
        return EMILY_OK;
    }
    if (strncmp(text, "cuda", 4) == 0) {
        const char *rest = text + 4;
        if (*rest == 0) {
            *out = (emily_device){EMILY_DEVICE_CUDA, 0};
            return EMILY_OK;
        }
        if (*rest == ':' && rest[1]) {
            char *end;
            long idx = strtol(rest + 1, &end, 10);
            if (*end == 0 && idx >= 0 && idx < 1024) {
                *out = (emily_device){EMILY_DEVICE_CUDA, (int)idx};
                return EMILY_OK;
            }
        }
    }
    return emily_error(EMILY_ERR_ARGUMENT, "device_parse: unknown device \"%s\" (expected cpu, cuda or cuda:N)", text);
}

void emily_device_format(emily_device d, char *buf, size_t size) {
    if (!buf || size == 0) return;
    if (d.type == EMILY_DEVICE_CPU) snprintf(buf, size, "cpu");
    else snprintf(buf, size, "%s:%d", type_name(d.type), d.index);
}

bool emily_device_equal(emily_device a, emily_device b) { return a.type == b.type && a.index == b.index; }

int emily_device_count(emily_device_type type) {
    const emily_engine *e = ((int)type >= 0 && type < EMILY_DEVICE_TYPE_COUNT) ? emi_engine_for(type) : NULL;
    return e ? e->device_count() : 0;
}

emily_status emily_device_check(emily_device d) {
    const emily_engine *e;
    return emi_engine_get(d, &e);
}

emily_status emily_synchronize(emily_device d) {
    const emily_engine *e;
    emily_status s = emi_engine_get(d, &e);
    return s ? s : e->synchronize(d.index);
}

emily_status emily_memory_stats_get(emily_device d, emily_memory_stats *out) {
    if (!out) return emily_error(EMILY_ERR_ARGUMENT, "memory_stats: NULL output");
    const emily_engine *e;
    emily_status s = emi_engine_get(d, &e);
    return s ? s : e->memory_stats(d.index, out);
}

emily_status emily_memory_release_cache(emily_device d) {
    const emily_engine *e;
    emily_status s = emi_engine_get(d, &e);
    return s ? s : e->release_cache(d.index);
}

const char *emily_version(void) { return EMILY_VERSION; }
