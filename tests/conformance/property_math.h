/* What the property checks (properties.c, properties_exact.c) share:
 * complex doubles, tensors and corpus results loaded as them, a failure
 * message, norms and the unit roundoff of a type, the call's options. */
#ifndef EMILY_PROPERTY_MATH_H
#define EMILY_PROPERTY_MATH_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include "emily/emily.h"

typedef struct zd {
    double re, im;
} zd;

static inline zd zmul(zd a, zd b) { return (zd){a.re * b.re - a.im * b.im, a.im * b.re + a.re * b.im}; }
static inline zd zconj(zd a) { return (zd){a.re, -a.im}; }
static inline zd zsub(zd a, zd b) { return (zd){a.re - b.re, a.im - b.im}; }
double zabs(zd a);
/* Row i of a (leading dimension lda) times column j of b (ldb), over len
 * terms: one entry of a matrix product, all row-major. */
zd pm_row_col(const zd *a, int64_t lda, const zd *b, int64_t ldb, int64_t i, int64_t j, int64_t len);
/* Row i of x times row j conjugated (leading dimension ld), over len
 * terms: entry (i, j) of X X^H. */
zd pm_row_row_conj(const zd *x, int64_t ld, int64_t i, int64_t j, int64_t len);

/* All elements of t as complex doubles (malloc'd; NULL on failure). */
zd *pm_load(const emily_tensor *t);
/* The k-th tensor of a corpus result (a JSON list of tensors, or the one
 * tensor of a single-output op for k = 0), if it has want_size elements. */
zd *pm_load_expected(const json_t *expected, size_t k, int64_t want_size);

/* The first failure's message, kept. */
typedef struct pm_check {
    char *msg;
    size_t size;
    bool ok;
} pm_check;
bool pm_fail(pm_check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 2^-p for a type with p significand bits (its real type's). */
double pm_unit_roundoff(emily_dtype t);
double pm_fro(const zd *a, int64_t count);
double pm_max_abs(const zd *a, int64_t count);
/* Product of the leading axes of a (rank >= 2). */
int64_t pm_batch_count(const emily_tensor *a);

/* An op and what it is checked by: a row of the tables of the ops that
 * properties.c and properties_exact.c check. */
typedef struct pm_op {
    const char *op;
    const char *description;
} pm_op;
/* The row of op among rows[0..n), or NULL when op is none of them. */
const pm_op *pm_op_find(const pm_op *rows, size_t n, const char *op);

/* The call's trailing keyword list (NULL if none) and its entries. */
const emily_value *pm_opts(const emily_value *args, size_t nargs);
const emily_value *pm_opt(const emily_value *opts, const char *key);
double pm_opt_number(const emily_value *opts, const char *key, double dflt);
bool pm_opt_bool(const emily_value *opts, const char *key, bool dflt);

/* ||A||_inf (largest row sum of |a_ij|) of an n x n matrix. */
double pm_norm_inf(const zd *a, int64_t n);
/* ||A^-1||_inf by Gauss-Jordan elimination with partial pivoting in
 * double precision; INFINITY when A is singular. */
double pm_inverse_norm_inf(const zd *a, int64_t n);

#endif
