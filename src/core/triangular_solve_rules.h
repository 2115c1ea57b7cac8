/* Nx.BinaryBackend.Matrix.ts's triangular solve, written once for the
 * CPU kernel (src/cpu/linalg/triangular_solve.c) and the CUDA engine's
 * exact kernel (src/cuda/linalg_triangular_exact.cu): how the system maps
 * onto a forward substitution, and the arithmetic of one step. Both
 * devices then perform the same operations in the same order, in double
 * (complex: pairs of doubles with the Complex library's formulas, no fused
 * multiply-add: core/scalar_unary.h's emily_cd_*), so their results are
 * the same bits. Valid C11 and CUDA C++ (core/host_device.h).
 *
 * The system becomes m . y = c with m lower triangular: a is conjugated
 * (:conjugate), transposed when left_side == (transform is :transpose),
 * and reversed (rows and columns) when left_side == (lower == (transform
 * is :transpose)); b is transposed for a right-side matrix solve and
 * reversed with a. Column c of y is then, for i = 0 .. n - 1,
 *     acc = 0; for j = 0 .. i - 1: acc = m[i][j] * y[j] + acc
 *     y[i] = (i == 0 ? c[i] : c[i] - acc) / m[i][i]
 * (the sum in increasing j, as the reference's `x * y + acc` fold), and x
 * is y transformed back the way b was. */
#ifndef EMILY_CORE_TRIANGULAR_SOLVE_RULES_H
#define EMILY_CORE_TRIANGULAR_SOLVE_RULES_H

#include <stdbool.h>
#include <stdint.h>
#include "core/host_device.h"
#include "core/scalar_unary.h"
#include "emily/ops_linalg.h"

typedef struct emi_ts_plan {
    int64_t n;              /* a is n x n */
    int64_t rows_b, cols_b; /* b's matrix as given (a vector: n x 1) */
    int64_t ncols;          /* right-hand sides: columns of the transformed b */
    bool conj_a, transpose_a, reverse, transpose_b;
} emi_ts_plan;

/* b_rows, b_cols: b's last two dims (ignored for a vector b). */
EMILY_HD emi_ts_plan emi_ts_plan_make(int64_t n, bool b_vector, int64_t b_rows, int64_t b_cols, bool left_side,
                                      bool lower, emily_transform_a transform) {
    bool opt_t = transform == EMILY_TRANSFORM_TRANSPOSE;
    emi_ts_plan p;
    p.n = n;
    p.rows_b = b_vector ? n : b_rows;
    p.cols_b = b_vector ? 1 : b_cols;
    p.conj_a = transform == EMILY_TRANSFORM_CONJUGATE;
    p.transpose_a = left_side == opt_t;
    p.reverse = left_side == (lower == opt_t);
    p.transpose_b = !left_side && !b_vector;
    p.ncols = p.transpose_b ? p.rows_b : p.cols_b;
    return p;
}

/* Where m's element (i, j) is in a's n x n matrix (row-major). */
EMILY_HD int64_t emi_ts_a_index(const emi_ts_plan *p, int64_t i, int64_t j) {
    if (p->reverse) {
        i = p->n - 1 - i;
        j = p->n - 1 - j;
    }
    return p->transpose_a ? j * p->n + i : i * p->n + j;
}

/* Where element (i, c) of the transformed right-hand side (and of y) is
 * in b's matrix, and in x's (row-major, rows_b x cols_b). */
EMILY_HD int64_t emi_ts_b_index(const emi_ts_plan *p, int64_t i, int64_t c) {
    if (p->reverse) {
        i = p->n - 1 - i;
        c = p->ncols - 1 - c;
    }
    return p->transpose_b ? c * p->cols_b + i : i * p->cols_b + c;
}

/* One step of row i's sum, acc = m[i][j] * y[j] + acc, and row i's value. */
EMILY_HD double emi_ts_step(double mij, double yj, double acc) { return EMILY_ADD(EMILY_MUL(mij, yj), acc); }
EMILY_HD double emi_ts_value(double ci, double acc, double mii, bool first) {
    return (first ? ci : EMILY_SUB(ci, acc)) / mii;
}
EMILY_HD emily_cd emi_ts_step_cd(emily_cd mij, emily_cd yj, emily_cd acc) {
    return emily_cd_add(emily_cd_mul(mij, yj), acc);
}
EMILY_HD emily_cd emi_ts_value_cd(emily_cd ci, emily_cd acc, emily_cd mii, bool first) {
    return emily_cd_div(first ? ci : emily_cd_sub(ci, acc), mii);
}
/* m's element from a's (complex: conjugated for :conjugate). */
EMILY_HD emily_cd emi_ts_m_cd(const emi_ts_plan *p, emily_cd aij) {
    return p->conj_a ? emily_cd_make(aij.re, -aij.im) : aij;
}

#endif
