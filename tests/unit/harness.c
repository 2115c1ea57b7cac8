#include <stdlib.h>
#include "harness.h"

int harness_failures = 0;

int harness_run(const char *suite, const harness_case *cases) {
    int total = 0;
    for (const harness_case *c = cases; c->name; c++) {
        int before = harness_failures;
        c->fn();
        total++;
        if (harness_failures != before) fprintf(stderr, "%s: %s failed\n", suite, c->name);
        if (emily_live_tensors() != 0 || emily_live_buffers() != 0) {
            fprintf(stderr, "%s: %s leaked %lld tensors and %lld buffers\n", suite, c->name,
                    (long long)emily_live_tensors(), (long long)emily_live_buffers());
            harness_failures++;
            return 1;
        }
    }
    printf("%s: %d tests, %d failed checks\n", suite, total, harness_failures);
    return harness_failures ? 1 : 0;
}

/* The helpers below fail like a CHECK (counted, reported, the case goes
 * on) rather than aborting: under a memory limit (ulimit -v) an
 * allocation fails, and the run must still end with its report. */
static void helper_failed(const char *helper, const char *why) {
    fprintf(stderr, "  FAIL %s: %s\n", helper, why);
    harness_failures++;
}

emily_tensor *t_from(emily_dtype dt, int rank, const int64_t *shape, const void *data) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    emily_tensor *t = NULL;
    if (emily_from_binary(EMILY_CPU, dt, rank, shape, data, (size_t)n * emily_dtype_size(dt), &t)) {
        helper_failed("t_from", emily_last_error());
        return NULL;
    }
    return t;
}

double t_get(const emily_tensor *t, int64_t i) {
    if (!t) return NAN;
    size_t es = emily_dtype_size(emily_tensor_dtype(t));
    size_t nb = emily_tensor_nbytes(t);
    if (i < 0 || (size_t)i >= nb / (es ? es : 1)) {
        helper_failed("t_get", "element index out of range");
        return NAN;
    }
    unsigned char *buf = malloc(nb ? nb : 1);
    if (!buf) {
        helper_failed("t_get", "out of host memory");
        return NAN;
    }
    if (emily_to_binary(t, buf, nb)) {
        helper_failed("t_get", emily_last_error());
        free(buf);
        return NAN;
    }
    unsigned char *p = buf + (size_t)i * es;
    double v;
    switch (emily_tensor_dtype(t)) {
    case EMILY_U8: v = *(uint8_t *)p; break;
    case EMILY_U16: v = *(uint16_t *)p; break;
    case EMILY_U32: v = *(uint32_t *)p; break;
    case EMILY_U64: v = (double)*(uint64_t *)p; break;
    case EMILY_S8: v = *(int8_t *)p; break;
    case EMILY_S16: v = *(int16_t *)p; break;
    case EMILY_S32: v = *(int32_t *)p; break;
    case EMILY_S64: v = (double)*(int64_t *)p; break;
    case EMILY_F16: v = emily_f16_to_f32(*(uint16_t *)p); break;
    case EMILY_BF16: v = emily_bf16_to_f32(*(uint16_t *)p); break;
    case EMILY_F32: case EMILY_C64: v = *(float *)p; break;
    default: v = *(double *)p; break;
    }
    free(buf);
    return v;
}

bool t_shape_is(const emily_tensor *t, int rank, const int64_t *shape) {
    if (!t || emily_tensor_rank(t) != rank) return false;
    for (int i = 0; i < rank; i++)
        if (emily_tensor_shape(t)[i] != shape[i]) return false;
    return true;
}
