/* The main job: a short tour of libemily on its default device, the CPU.
 * Each step prints what it computed; any failure prints the engine's
 * message and exits non-zero. */
#include <stdio.h>
#include <stdlib.h>
#include "emily/emily.h"

#define TRY(call)                                                                \
    do {                                                                         \
        if ((call) != EMILY_OK) {                                                \
            fprintf(stderr, "demo: %s failed: %s\n", #call, emily_last_error()); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

static void show(const char *label, const emily_tensor *t) {
    int64_t n = emily_tensor_size(t);
    emily_tensor *f;
    TRY(emily_as_type(t, EMILY_F64, &f)); /* print every dtype the same way */
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!v) exit(1);
    TRY(emily_to_binary(f, v, sizeof(double) * (size_t)n));
    printf("%-34s %s{", label, emily_dtype_name(emily_tensor_dtype(t)));
    for (int i = 0; i < emily_tensor_rank(t); i++) printf(i ? ", %lld" : "%lld", (long long)emily_tensor_shape(t)[i]);
    printf("} [");
    for (int64_t i = 0; i < n && i < 8; i++) printf(i ? ", %g" : "%g", v[i]);
    printf(n > 8 ? ", ...]\n" : "]\n");
    free(v);
    emily_tensor_release(f);
}

int main(void) {
    printf("libemily %s: devices cpu=%d cuda=%d\n\n", emily_version(), emily_device_count(EMILY_DEVICE_CPU),
           emily_device_count(EMILY_DEVICE_CUDA));

    int64_t s23[2] = {2, 3};
    emily_tensor *a, *b, *c, *d, *e, *f, *g, *h, *m;
    TRY(emily_iota(EMILY_CPU, EMILY_S32, 2, s23, -1, &a));
    show("iota s32 {2,3}", a);

    float row[3] = {0.5f, -1.0f, 2.0f};
    int64_t s3[1] = {3};
    TRY(emily_from_binary(EMILY_CPU, EMILY_F32, 1, s3, row, sizeof row, &b));
    TRY(emily_binary(EMILY_ADD, a, b, EMILY_DTYPE_AUTO, &c));
    show("a + row (s32 + f32 broadcast)", c);

    TRY(emily_unary(EMILY_EXP, c, &d));
    show("exp(a + row)", d);

    int axis1[1] = {1};
    TRY(emily_reduce(EMILY_REDUCE_SUM, d, 1, axis1, false, EMILY_DTYPE_AUTO, &e));
    show("sum over axis 1", e);

    int perm[2] = {1, 0};
    TRY(emily_transpose(a, perm, &f)); /* a view: no copy */
    show("transpose(a) (a view)", f);

    int ca[1] = {1}, cb[1] = {0};
    TRY(emily_dot(a, 1, ca, 0, NULL, f, 1, cb, 0, NULL, EMILY_DTYPE_AUTO, &g));
    show("dot(a, transpose(a))", g);

    uint8_t bytes[3] = {250, 3, 7};
    TRY(emily_from_binary(EMILY_CPU, EMILY_U8, 1, s3, bytes, sizeof bytes, &h));
    TRY(emily_binary(EMILY_MULTIPLY, h, h, EMILY_DTYPE_AUTO, &m));
    show("u8 * u8 wraps like Nx", m);

    emily_tensor *bad = NULL;
    int64_t s4[1] = {4};
    emily_tensor *q;
    TRY(emily_iota(EMILY_CPU, EMILY_F32, 1, s4, -1, &q));
    emily_status st = emily_binary(EMILY_ADD, b, q, EMILY_DTYPE_AUTO, &bad);
    printf("\nerrors are values: %s: %s\n", emily_status_name(st), emily_last_error());

    emily_tensor *all[] = {a, b, c, d, e, f, g, h, m, q};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) emily_tensor_release(all[i]);
    printf("live tensors after release: %lld\n", (long long)emily_live_tensors());
    return st == EMILY_OK || emily_live_tensors() != 0;
}
