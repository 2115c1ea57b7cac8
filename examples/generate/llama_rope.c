/* llama_rope.h: positions on the device, then emily_rope. */
#include <stdlib.h>
#include <string.h>
#include "llama_rope.h"

emily_status llama_rope_make(llama_rope *r, const llama_config *c, emily_device device, int64_t pos, int64_t n) {
    memset(r, 0, sizeof *r);
    r->options = (emily_rope_options){.dims = c->rope_dims, .base = c->rope_base, .traditional = true};
    int32_t *p = malloc(sizeof *p * (size_t)n);
    if (!p) return emily_error(EMILY_ERR_MEMORY, "llama_rope: out of host memory");
    for (int64_t i = 0; i < n; i++) p[i] = (int32_t)(pos + i);
    int64_t shape[1] = {n};
    emily_status s = emily_from_binary(device, EMILY_S32, 1, shape, p, sizeof *p * (size_t)n, &r->positions);
    free(p);
    return s;
}

void llama_rope_free(llama_rope *r) {
    emily_tensor_release(r->positions);
    r->positions = NULL;
}

emily_tensor *llama_rope_apply(ts_scope *s, const llama_rope *r, const emily_tensor *x) {
    emily_tensor *t = NULL;
    if (s->status || !x) return NULL;
    emily_status st = emily_rope(x, r->positions, &r->options, &t);
    return ts_hold(s, st, t);
}
