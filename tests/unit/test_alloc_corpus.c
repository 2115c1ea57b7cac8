/* Out-of-memory testing over the conformance corpus (issue 20): the
 * SQLite-style sweep of test_alloc_failure.c, driven by recorded Nx calls
 * instead of a hand-picked list. For every case of the corpus (or every
 * EVERY-th line of each file), each case is decoded and dispatched on the
 * CPU once with nothing failing (the answer), then again with allocation
 * n failing, for n = 1, 2, ... until a run meets no failure. The decoding
 * (tests/conformance/json_values.c) runs under the injection too, so its
 * failures are swept as well. Each injected run must:
 *   - fail with EMILY_ERR_MEMORY and a message saying "memory", returning
 *     no tensors; or fail in decoding with a message; or, where the answer
 *     is itself an error, fail with the answer's status; or
 *   - succeed with the answer's bytes (an op may fall back to a path that
 *     needs less memory, but never to a different result);
 * and leave as many tensors and buffers alive as before it.
 *
 * Linked with the allocator shim of fail_alloc.h (the Makefile's
 * ALLOC_WRAP): every allocation of the library (static) and of this file
 * can fail; jansson's (a shared library) cannot, so the JSON text is
 * parsed before the injection is armed.
 *
 * EMILY_ALLOC_CORPUS_EVERY=N takes every N-th case (default 1: all 25,670
 * cases, about 610,000 runs, 4 s in the -O2 build). The files are tests/corpus/{doctests,sweep,narrow}
 * .jsonl.gz, read from the repository root (where `make check` runs). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include "../conformance/corpus_file.h"
#include "../conformance/json_values.h"
#include "fail_alloc.h"
#include "harness.h"

/* Past this many allocations a case is assumed to loop on failure. */
#define MAX_ALLOCS 50000

/* One dispatch of a case: its status, message and output bytes. */
typedef struct outcome {
    emily_status status;
    bool decoded;
    int n;
    emily_dtype dtype[EMILY_DISPATCH_MAX_OUTPUTS];
    unsigned char *bytes[EMILY_DISPATCH_MAX_OUTPUTS];
    size_t nbytes[EMILY_DISPATCH_MAX_OUTPUTS];
    char msg[256];
} outcome;

static void outcome_free(outcome *o) {
    for (int k = 0; k < o->n; k++) free(o->bytes[k]);
    memset(o, 0, sizeof *o);
}

/* Decodes and dispatches `line` (RUN mode) into *o. Returns false when
 * reading the outputs back failed (itself an allocation that may fail:
 * the caller treats it as an out-of-memory exit). */
static bool run_line(const char *op, const json_t *line, outcome *o) {
    memset(o, 0, sizeof *o);
    jv_tree out = {0}, args = {0};
    bool ok = true;
    if (jv_decode(&out, json_object_get(line, "out"), EMILY_CPU, true, o->msg, sizeof o->msg) ||
        jv_decode(&args, json_object_get(line, "args"), EMILY_CPU, false, o->msg, sizeof o->msg)) {
        o->status = EMILY_ERR_MEMORY;
        goto done;
    }
    o->decoded = true;
    emily_dispatch_result res = {0};
    o->status = emily_dispatch(op, EMILY_CPU, out.root, args.root->items, args.root->n, EMILY_DISPATCH_RUN, &res);
    snprintf(o->msg, sizeof o->msg, "%s", o->status ? emily_last_error() : "");
    if (o->status) {
        if (res.n != 0) {
            fprintf(stderr, "  FAIL %s: a failed call returned %d tensors\n", op, res.n);
            harness_failures++;
        }
        goto done;
    }
    o->n = res.n;
    for (int k = 0; k < res.n; k++) {
        const emily_tensor *t = res.tensors[k];
        o->dtype[k] = emily_tensor_dtype(t);
        o->nbytes[k] = emily_dtype_binary_size(o->dtype[k], emily_tensor_size(t));
        o->bytes[k] = malloc(o->nbytes[k] ? o->nbytes[k] : 1);
        if (!o->bytes[k] || emily_to_binary(t, o->bytes[k], o->nbytes[k])) ok = false;
    }
    emily_dispatch_result_release(&res);
done:
    jv_free(&out);
    jv_free(&args);
    return ok;
}

static bool same_outcome(const outcome *a, const outcome *b) {
    if (a->n != b->n) return false;
    for (int k = 0; k < a->n; k++)
        if (a->dtype[k] != b->dtype[k] || a->nbytes[k] != b->nbytes[k] ||
            memcmp(a->bytes[k], b->bytes[k], a->nbytes[k]) != 0)
            return false;
    return true;
}

typedef struct tally {
    long cases, runs, failures_injected, max_allocs;
} tally;

/* Sweeps one case; returns false after a failure (reported). */
static bool sweep_case(const char *file, long lineno, const char *op, const json_t *line, tally *t) {
    outcome want;
    int64_t live_t = emily_live_tensors(), live_b = emily_live_buffers();
    if (!run_line(op, line, &want) || !want.decoded) {
        fprintf(stderr, "  FAIL %s:%ld (%s): the case does not run without injection: %s\n", file, lineno, op,
                want.msg);
        harness_failures++;
        outcome_free(&want);
        return false;
    }
    bool good = true;
    long n = 1;
    for (; n <= MAX_ALLOCS && good; n++) {
        outcome got;
        fail_alloc_after(n);
        bool read = run_line(op, line, &got);
        fail_alloc_after(0);
        bool fired = fail_alloc_fired();
        t->runs++;
        const char *why = NULL;
        if (!read) {
            if (!fired) why = "reading the result back failed with no injected failure";
        } else if (!got.decoded) {
            if (!fired || !got.msg[0]) why = "decoding failed without an injected failure or a message";
        } else if (got.status == EMILY_OK) {
            if (want.status != EMILY_OK || !same_outcome(&got, &want)) why = "a different result returned as success";
        } else if (got.status == EMILY_ERR_MEMORY && fired) {
            if (!strstr(got.msg, "memory")) why = "the out-of-memory message does not say memory";
        } else if (got.status != want.status) {
            why = "an error other than out-of-memory";
        }
        if (why) {
            fprintf(stderr, "  FAIL %s:%ld (%s): allocation %ld failing: %s (got %s: %s)\n", file, lineno, op, n, why,
                    emily_status_name(got.status), got.msg);
            harness_failures++;
            good = false;
        }
        outcome_free(&got);
        if (emily_live_tensors() != live_t || emily_live_buffers() != live_b) {
            fprintf(stderr, "  FAIL %s:%ld (%s): allocation %ld failing leaked %lld tensors, %lld buffers\n", file,
                    lineno, op, n, (long long)(emily_live_tensors() - live_t),
                    (long long)(emily_live_buffers() - live_b));
            harness_failures++;
            good = false;
        }
        if (fired) t->failures_injected++;
        else break;
    }
    if (n > MAX_ALLOCS) {
        fprintf(stderr, "  FAIL %s:%ld (%s): more than %d allocations\n", file, lineno, op, MAX_ALLOCS);
        harness_failures++;
        good = false;
    }
    if (n > t->max_allocs) t->max_allocs = n;
    t->cases++;
    outcome_free(&want);
    return good;
}

static long every(void) {
    const char *e = getenv("EMILY_ALLOC_CORPUS_EVERY");
    long v = e ? strtol(e, NULL, 10) : 1;
    return v >= 1 ? v : 1;
}

static void sweep_file(const char *path) {
    corpus_file *f = corpus_file_open(path);
    CHECK(f != NULL);
    if (!f) return;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len;
    long lineno = 0, step = every(), failed = 0;
    tally t = {0};
    while ((len = corpus_file_line(f, &buf, &cap)) > 0) {
        if (lineno++ % step) continue;
        json_error_t jerr;
        json_t *line = json_loadb(buf, (size_t)len, 0, &jerr);
        const char *op = line ? json_string_value(json_object_get(line, "op")) : NULL;
        CHECK(op != NULL);
        /* a failure stops nothing: the next cases still run, each failure
         * is reported once (the first n that shows it) */
        if (op && emily_dispatch_supports(op) && !sweep_case(path, lineno, op, line, &t)) failed++;
        json_decref(line);
    }
    CHECK(len == 0);
    free(buf);
    corpus_file_close(f);
    printf("  %s: %ld cases (every %ld), %ld runs, %ld failures injected, at most %ld allocations a case, %ld "
           "failed\n",
           path, t.cases, step, t.runs, t.failures_injected, t.max_allocs, failed);
    CHECK(t.cases > 0);
}

TEST(doctests_fail_cleanly) { sweep_file("tests/corpus/doctests.jsonl.gz"); }
TEST(sweep_fail_cleanly) { sweep_file("tests/corpus/sweep.jsonl.gz"); }
TEST(narrow_types_fail_cleanly) { sweep_file("tests/corpus/narrow.jsonl.gz"); }

RUN_TESTS("alloc_corpus", CASE(doctests_fail_cleanly), CASE(sweep_fail_cleanly), CASE(narrow_types_fail_cleanly))
