/* What the CPU kernels that reproduce Nx's linear algebra share
 * (linalg.h: lu, cholesky, triangular_solve, solve, determinant, qr,
 * eigh, svd).
 *
 * Nx.BinaryBackend evaluates Nx's defn algorithms one tensor operation at
 * a time, computing each element in double precision and writing it in
 * the tensor's type; the kernels do the same operations in the same order
 * and round to the working type after each (rnd, zrnd). Sums add their
 * terms in index order starting from +0, products are never fused
 * (-ffp-contract=off), and complex arithmetic is Elixir's Complex
 * library's (complex.h). Scalar constants follow Nx.Defn.Expr: a float
 * constant next to a tensor in arithmetic takes the tensor's type, but in
 * a comparison it stays f32 (f32c), and an expression of constants only
 * is folded in f32. */
#ifndef EMILY_CPU_LINALG_REFERENCE_H
#define EMILY_CPU_LINALG_REFERENCE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include "core/tensor_impl.h"
#include "cpu/element_access.h"
#include "cpu/linalg/complex.h"

/* x rounded to the type t (a complex type: its part type), as the
 * reference writes an intermediate tensor of type t; complex values part
 * by part. */
static inline double rnd(emily_dtype t, double x) { return we_round(t, x); }
static inline zd zrnd(emily_dtype t, zd x) { return (zd){rnd(t, x.re), rnd(t, x.im)}; }

/* A float constant in a comparison: an f32 tensor. */
static inline double f32c(double x) { return (double)(float)x; }

/* Nx.Defn's `x ** 2` on a float tensor: Complex.pow -> :math.pow. */
static inline double sq(double x) { return pow(x, 2.0); }

/* Matrices of `per` elements in t. */
static inline int64_t batch_count(const emily_tensor *t, int64_t per) { return per > 0 ? t->size / per : 0; }

/* The reference's eps (1.0e-10) reaches Cholesky as a scalar constant
 * tensor of type f32, so it is f32(1.0e-10). */
#define EMILY_CHOLESKY_EPS ((double)1.0e-10f)

/* Nx.LinAlg.LU on a row-major n x n matrix in place, work type w (f64
 * values rounded to w; complex: part type): on return a holds L's
 * multipliers below the diagonal and U on and above it, perm the row
 * permutation (perm[i] = original row of row i) (lu.c). */
void emi_linalg_lu_real(double *a, int64_t n, emily_dtype w, int64_t *perm);
void emi_linalg_lu_complex(zd *a, int64_t n, emily_dtype w, int64_t *perm);

/* C = A . B (A p x q, B q x r, row-major), sums in index order from +0,
 * rounded to w (qr.c). */
void emi_linalg_mm(const double *A, const double *B, double *C, int64_t p, int64_t q, int64_t r, emily_dtype w);

/* Nx.LinAlg.QR.qr_matrix on a real m_in x n_in matrix (qr.c): see there;
 * ws holds emi_linalg_qr_scratch(m_in, n_in) doubles. */
int64_t emi_linalg_qr_scratch(int64_t m_in, int64_t n_in);
void emi_linalg_qr_real(const double *a, int64_t m_in, int64_t n_in, emily_dtype w, double eps, bool complete,
                        bool explicit_h, bool compact, double *q_out, double *r_out, double *ws);

/* Nx.LinAlg.BlockEigh on a real symmetric n x n matrix (eigh.c): w_out
 * n eigenvalues, v_out n x n; ws holds emi_linalg_eigh_scratch(n)
 * doubles. */
int64_t emi_linalg_eigh_scratch(int64_t n);
void emi_linalg_eigh_real(const double *a, int64_t n, emily_dtype w, double eps, int64_t max_iter, double *w_out,
                          double *v_out, double *ws);

/* Nx.argsort(direction: :desc) on Nx.BinaryBackend: a stable order by
 * decreasing value, NaN first (eigh.c). */
void emi_linalg_argsort_desc(const double *x, int64_t n, int64_t *order);

#endif
