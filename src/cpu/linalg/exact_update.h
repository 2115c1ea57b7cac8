/* An exact, blocked matrix update for the linear algebra kernels that
 * must reproduce Nx.BinaryBackend's arithmetic bit for bit (blocked LU and
 * Cholesky in blocked.c):
 *
 *     for every (i, j):  acc = c[i][j];
 *                        for p = 0 .. k-1:  acc = acc + a[i][p] * b[p][j]   (add)
 *                                       or  acc = acc - a[i][p] * b[p][j]   (subtract)
 *                        c[i][j] = acc
 *
 * Each product is rounded to double and then added or subtracted, never
 * fused, and the terms go in increasing p. Because the accumulator starts
 * from c, a sum can be continued across calls: a sum over p in [0, K)
 * split into the calls [0, K1), [K1, K) gives the same bits as one loop.
 * That is what lets a blocked factorization keep the unblocked one's
 * rounding for every element.
 *
 * Operands are strided (element (i, p) of a at a[i * a_rs + p * a_cs]),
 * so transposed views need no copy. c is row-major with row stride ldc.
 * With `lower`, only elements with i + diag_off >= j are needed: tiles
 * entirely above that diagonal are skipped, tiles that cross it are
 * computed whole (the caller must tolerate, and initialize, the extra
 * elements). */
#ifndef EMILY_CPU_EXACT_UPDATE_H
#define EMILY_CPU_EXACT_UPDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct emily_xupdate {
    int64_t m, n, k;
    const double *a;
    int64_t a_rs, a_cs;
    const double *b;
    int64_t b_rs, b_cs;
    double *c;
    int64_t ldc;
    bool subtract;
    /* with subtract: each product and each result rounded to f32, the
     * reference's f32 LU step f32(c - f32(a * b)); a, b and c must hold
     * f32 values (it is computed in f32 arithmetic, the same bits then) */
    bool round_f32;
    bool lower;
    int64_t diag_off;
} emily_xupdate;

/* Scratch for emi_xupdate_run: packed panels for updates with at most
 * nmax columns, and for `threads` threads. */
typedef struct emily_xupdate_ws {
    double *buf;
    int64_t nmax;
    int threads;
} emily_xupdate_ws;

/* false when out of memory. threads: the most threads an update may use
 * (1: never parallel). */
bool emi_xupdate_ws_init(emily_xupdate_ws *ws, int64_t nmax, int threads);
void emi_xupdate_ws_free(emily_xupdate_ws *ws);

/* Runs the update (u->n <= ws->nmax). Large updates run on up to
 * ws->threads threads; the result does not depend on the thread count. */
void emi_xupdate_run(const emily_xupdate *u, emily_xupdate_ws *ws);

/* Multiply-adds from which an update runs on several threads (tests set
 * it low to run the threaded path on small updates; negative: the
 * default, 2^28). */
void emi_xupdate_set_parallel_min(int64_t work);

/* The same, computed by the plain triple loop (tests compare the two). */
void emi_xupdate_reference(const emily_xupdate *u);

#endif
