/* Shared by the libFuzzer targets (tests/fuzz/README.md): the size caps
 * that keep one input from allocating gigabytes or running for seconds,
 * and the one-thread setup. The caps live here, in the harness; the
 * library itself runs whatever it is given. */
#ifndef EMILY_FUZZ_COMMON_H
#define EMILY_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "emily/emily.h"

/* Elements of all the tensors and output templates of one input. */
#define FUZZ_MAX_ELEMENTS ((int64_t)1 << 20)

/* The libFuzzer entry points every target defines. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One thread for OpenMP and the CPU engine's helpers (the fuzzers run on
 * one core); call from LLVMFuzzerInitialize, before any library call. */
void fuzz_single_thread(void);

/* Elements of a shape as given (negative dimensions count as 0); the
 * product saturates at INT64_MAX. */
int64_t fuzz_shape_elements(int rank, const int64_t *shape);

/* Integers in arguments (options, lists, tuples, integer scalar tensors)
 * between FUZZ_MAX_INT and FUZZ_HUGE_INT in magnitude make valid work in
 * proportion to them (an FFT length of 880,442 takes 17 s under ASan;
 * padding, window sizes and dilations likewise), so the harness does not
 * dispatch them; larger ones must meet the library's own checks quickly
 * and are kept. */
#define FUZZ_MAX_INT ((int64_t)1 << 16)
#define FUZZ_HUGE_INT ((int64_t)1 << 40)

/* Whether to dispatch a call: no integer argument in the middle range,
 * and at most FUZZ_MAX_ELEMENTS elements in all the tensors and output
 * templates. */
bool fuzz_call_ok(const emily_value *out, const emily_value *args, size_t nargs);

/* Whether an allocation was made to fail during this input: false in the
 * fuzz targets; tests/fuzz/alloc_sweep.c overrides it (a weak
 * definition), so that a read-back which needs memory may fail there. */
bool fuzz_alloc_failed(void);

/* Checks that no input left a tensor handle or buffer alive: aborts (a
 * crash libFuzzer reports) when the counts differ from the baseline. */
void fuzz_check_live(int64_t tensors, int64_t buffers, const char *what);

#endif
