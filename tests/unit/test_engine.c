/* The device interface (src/core/engine.h, src/core/kernels.h): engines
 * are constant tables, and supports() answers from them. */
#include <string.h>
#include "harness.h"
#include "core/engine.h"

static const char *const kernel_names[] = {
#define KERNEL_NAME(ID, family, entry) #family "." #entry,
    EMI_KERNELS(KERNEL_NAME)
#undef KERNEL_NAME
};

TEST(cpu_engine_is_one_constant_table) {
    const emily_engine *e = emi_cpu_engine();
    CHECK(e && strcmp(e->name, "cpu") == 0);
    CHECK(emi_engine_for(EMILY_DEVICE_CPU) == e);
    CHECK(emi_cpu_engine() == e);
    CHECK(e->supports != NULL);
}

/* Every kernel of the CPU engine, for every op it is asked about and
 * every type, but the FP8 tensor-core product (optional: the op layer
 * widens 8-bit floats to f32 where a device has none). */
TEST(cpu_engine_supports_everything) {
    const emily_engine *e = emi_cpu_engine();
    CHECK(sizeof kernel_names / sizeof *kernel_names == EMI_KERNEL_COUNT);
    CHECK(!emi_engine_has_kernel(e, EMI_KERNEL_GEMM_FP8, 0, NULL, 0));
    for (int k = 0; k < EMI_KERNEL_COUNT; k++) {
        if (k == EMI_KERNEL_GEMM_FP8) continue;
        bool all = emi_engine_has_kernel(e, (emi_kernel)k, 0, NULL, 0);
        for (int t = 0; t < EMILY_DTYPE_COUNT; t++) {
            emily_dtype dts[3] = {(emily_dtype)t, (emily_dtype)t, EMILY_F64};
            all = all && e->supports(e, (emi_kernel)k, 0, dts, 3) &&
                  emi_engine_supports(e, (emi_kernel)k, 1, (emily_dtype)t);
        }
        if (!all) fprintf(stderr, "  cpu lacks %s\n", kernel_names[k]);
        CHECK(all);
    }
    CHECK(!emi_engine_has_kernel(e, EMI_KERNEL_COUNT, 0, NULL, 0));
}

/* supports() reads the table: a missing family or entry is a missing
 * kernel, and nothing else is. */
static emily_status fake_sort(emily_tensor *dst, const emily_tensor *src, int axis, bool descending) {
    (void)dst, (void)src, (void)axis, (void)descending;
    return EMILY_OK;
}

TEST(has_kernel_reads_the_table) {
    static const struct emily_sort_kernels only_sort = {.sort = fake_sort};
    emily_engine fake = {.name = "fake", .sort = &only_sort, .supports = emi_engine_has_kernel};
    CHECK(fake.supports(&fake, EMI_KERNEL_SORT, 0, NULL, 0));
    CHECK(!fake.supports(&fake, EMI_KERNEL_ARGSORT, 0, NULL, 0));
    CHECK(!fake.supports(&fake, EMI_KERNEL_TOP_K, 0, NULL, 0));
    for (int k = 0; k < EMI_KERNEL_COUNT; k++)
        if (k != EMI_KERNEL_SORT) CHECK(!emi_engine_has_kernel(&fake, (emi_kernel)k, 0, NULL, 0));
}

/* The CUDA engine, when this build has one (a machine without a GPU
 * still has the table): every family, except the linear algebra entries
 * that are Nx's reference algorithms. */
TEST(cuda_engine_table) {
    const emily_engine *e = emi_cuda_engine();
    CHECK(emi_engine_for(EMILY_DEVICE_CUDA) == e);
    if (!e) return;
    CHECK(strcmp(e->name, "cuda") == 0);
    CHECK(emi_engine_supports(e, EMI_KERNEL_UNARY, EMILY_EXP, EMILY_F32));
    CHECK(emi_engine_supports(e, EMI_KERNEL_COPY, 0, EMILY_BF16));
    CHECK(emi_engine_supports(e, EMI_KERNEL_SORT, 0, EMILY_F32));
    CHECK(emi_engine_supports(e, EMI_KERNEL_GATHER, 0, EMILY_S64));
    CHECK(emi_engine_supports(e, EMI_KERNEL_FFT, 0, EMILY_C64));
    CHECK(emi_engine_supports(e, EMI_KERNEL_SCAN, 0, EMILY_F32));
    CHECK(emi_engine_supports(e, EMI_KERNEL_GEMM_FP8, 0, EMILY_F8_E4M3FN));
    CHECK(emi_engine_supports(e, EMI_KERNEL_WINDOW_REDUCE, 0, EMILY_BF16));
    CHECK(emi_engine_supports(e, EMI_KERNEL_LAYER_NORM, 0, EMILY_F16));
    CHECK(emi_engine_supports(e, EMI_KERNEL_RMS_NORM, 0, EMILY_F64));
    /* linear algebra runs on cuSOLVER through the table's native entries;
     * Nx's own algorithms (linalg: :reference) stay CPU-only */
    CHECK(!emi_engine_supports(e, EMI_KERNEL_QR, 0, EMILY_F64));
    CHECK(!emi_engine_supports(e, EMI_KERNEL_LU_NX07, 0, EMILY_F32));
}

/* (The first uses of the engine from many threads at once are in
 * test_dispatch's first case.) */
RUN_TESTS("engine", CASE(cpu_engine_is_one_constant_table), CASE(cpu_engine_supports_everything),
          CASE(has_kernel_reads_the_table), CASE(cuda_engine_table))
