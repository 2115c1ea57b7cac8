/* triangular_solve cases shared by the GPU tests (test_cuda_linalg,
 * test_cuda_triangular): shapes of a and b, and the twelve option sets
 * (left side, lower, transform) a case takes. */
#ifndef EMILY_TEST_TRIANGULAR_CASES_H
#define EMILY_TEST_TRIANGULAR_CASES_H

#include <stdbool.h>
#include <stdint.h>
#include "emily/emily.h"

/* a is [.., n, n]; b is a vector (brank == rank - 1) or a matrix. */
typedef struct tri_case {
    int rank;
    int64_t a[3], b[3];
    int brank;
} tri_case;

enum { TRI_OPTION_SETS = 12 };

/* One option set of a case: the side, the triangle, the transform, and
 * the case's ranks and matrix size. */
typedef struct tri_setup {
    bool left, lower;
    emily_transform_a tr;
    int rank, brank;
    int64_t n;
} tri_setup;

/* Option set opt (0 .. TRI_OPTION_SETS - 1) of case c; false when b's
 * matrix does not fit that side (right-side matrices are [.., m, n]: the
 * cases with [.., n, m] are left-only). */
static inline bool tri_options(const tri_case *c, int opt, tri_setup *o) {
    *o = (tri_setup){opt & 1, (opt & 2) != 0, (emily_transform_a)(opt / 4), c->rank, c->brank, c->a[c->rank - 1]};
    bool b_vector = c->brank == c->rank - 1;
    if (!b_vector && !o->left && c->b[c->brank - 1] != o->n) return false;
    if (!b_vector && o->left && c->b[c->brank - 2] != o->n) return false;
    return true;
}

#endif
