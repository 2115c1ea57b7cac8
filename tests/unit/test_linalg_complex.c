/* Complex linear algebra by the defining properties of each result, on
 * random c64 and c128 matrices whose imaginary parts are not zero (a
 * conjugation in the wrong place, or real and imaginary parts swapped,
 * only shows there), under every linalg method that applies (the
 * examples of Nx's own test suite are in test_linalg.c):
 * lu (p l u = a), solve (a x = b), determinant (against a cofactor
 * expansion), triangular_solve (every option), qr (q r = a, q unitary),
 * eigh (a v = v diag(w), v unitary), cholesky (l l^H = a); complex svd is
 * refused under every method, as Nx refuses it. */
#include <complex.h>
#include <stdlib.h>
#include "harness.h"

static const emily_linalg_method methods[3] = {EMILY_LINALG_LAPACK, EMILY_LINALG_REFERENCE,
                                               EMILY_LINALG_REFERENCE_NX07};
static const char *const method_names[3] = {"lapack", "reference", "reference_nx07"};
static const emily_dtype ctypes[2] = {EMILY_C64, EMILY_C128};

/* ---- helpers --------------------------------------------------------------- */

/* A fixed pseudo-random sequence in [-1, 1) (the same on every run). */
static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static double uniform(void) {
    rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
    return (double)(rng_state >> 11) / (double)(1ull << 52) - 1.0;
}
static double complex crand(void) {
    double re = uniform(), im = uniform();
    /* keep both parts away from 0 so that every entry is truly complex */
    return (re + (re < 0 ? -0.1 : 0.1)) + (im + (im < 0 ? -0.1 : 0.1)) * I;
}

/* A tensor of `dt` (c64 or c128) holding vals (rounded to c64 parts). */
static emily_tensor *ctensor(emily_dtype dt, int rank, const int64_t *shape, const double complex *vals) {
    emily_tensor *t = t_from(EMILY_C128, rank, shape, vals), *c = NULL;
    if (dt == EMILY_C128) return t;
    CHECK_OK(emily_as_type(t, dt, &c));
    emily_tensor_release(t);
    return c;
}

/* The values of `t` as read back from its own type (what the engine saw). */
static double complex *rounded(emily_dtype dt, int rank, const int64_t *shape, const double complex *vals) {
    emily_tensor *t = ctensor(dt, rank, shape, vals);
    double complex *v = t_cvals(t);
    emily_tensor_release(t);
    return v;
}

/* B = A^H for A m x n. */
static void adjoint(const double complex *a, double complex *b, int64_t m, int64_t n) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) b[j * m + i] = conj(a[i * n + j]);
}

static double max_abs(const double complex *a, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++)
        if (cabs(a[i]) > m) m = cabs(a[i]);
    return m;
}

/* max |a - b| relative to max(1, max |b|). */
static double rel_diff(const double complex *a, const double complex *b, int64_t n) {
    double m = 0, s = max_abs(b, n);
    for (int64_t i = 0; i < n; i++)
        if (!(cabs(a[i] - b[i]) <= m)) m = cabs(a[i] - b[i]); /* NaN sticks */
    return m / (s > 1 ? s : 1);
}

/* |Q^H Q - I| for Q m x k. */
static double unitarity(const double complex *q, int64_t m, int64_t k) {
    double complex *qh = malloc((size_t)(m * k) * sizeof *qh), *g = malloc((size_t)(k * k) * sizeof *g);
    adjoint(q, qh, m, k);
    c_matmul(qh, q, g, k, m, k);
    double e = 0;
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++) {
            double d = cabs(g[i * k + j] - (i == j ? 1.0 : 0.0));
            if (!(d <= e)) e = d;
        }
    free(qh);
    free(g);
    return e;
}

/* A tolerance for a result of type dt that went through O(n) steps. */
static double tol(emily_dtype dt, int64_t n) { return (dt == EMILY_C64 ? 2e-6 : 4e-15) * (double)(n + 4) * 8; }

/* `count` random values. */
static double complex *random_values(int64_t count) {
    double complex *a = malloc((size_t)(count + 1) * sizeof *a);
    for (int64_t i = 0; i < count; i++) a[i] = crand();
    return a;
}
/* n x n random matrices, `batch` of them. */
static double complex *random_matrices(int64_t batch, int64_t n) { return random_values(batch * n * n); }

static int fill_shape(int64_t batch, int64_t r, int64_t cols, int64_t *shape) {
    if (batch == 1) {
        shape[0] = r;
        shape[1] = cols;
        return 2;
    }
    shape[0] = batch;
    shape[1] = r;
    shape[2] = cols;
    return 3;
}

/* The square cases the tests run: sizes 1..6 (one matrix) and a batch of
 * 3 4x4; case c's batch, size and shape (its rank returned). */
#define NCASES 7
static int square_case(int c, int64_t *batch, int64_t *n, int64_t *shape) {
    *batch = c < 6 ? 1 : 3;
    *n = c < 6 ? c + 1 : 4;
    return fill_shape(*batch, *n, *n, shape);
}

/* One input of a test: its values (a, malloc'd), those values as the
 * engine sees them in the tensor's type (ar), and the tensor. */
typedef struct input {
    double complex *a, *ar;
    emily_tensor *t;
} input;

/* Takes the values a (malloc'd, of the given shape) as a tensor of type dt. */
static input input_of(emily_dtype dt, int rank, const int64_t *shape, double complex *a) {
    return (input){a, rounded(dt, rank, shape, a), ctensor(dt, rank, shape, a)};
}

static void input_free(input *in) {
    free(in->a);
    free(in->ar);
    emily_tensor_release(in->t);
}

/* Runs check on every square case, for both complex types and, with
 * every_method, under every linalg method (else once), on matrices that
 * make writes (a batch of n x n into a). */
typedef void (*make_fn)(double complex *a, int64_t batch, int64_t n);
typedef void (*check_fn)(emily_dtype dt, emily_linalg_method m, int64_t batch, int64_t n, const input *A);
static void over_square_cases(bool every_method, make_fn make, check_fn check) {
    for (int d = 0; d < 2; d++)
        for (int m = 0; m < (every_method ? 3 : 1); m++)
            for (int c = 0; c < NCASES; c++) {
                int64_t batch, n, shape[3];
                int rank = square_case(c, &batch, &n, shape);
                double complex *a = malloc((size_t)(batch * n * n + 1) * sizeof *a);
                make(a, batch, n);
                input A = input_of(ctypes[d], rank, shape, a);
                check(ctypes[d], methods[m], batch, n, &A);
                input_free(&A);
            }
}

/* Random matrices (the values random_matrices gives). */
static void make_random(double complex *a, int64_t batch, int64_t n) {
    for (int64_t i = 0; i < batch * n * n; i++) a[i] = crand();
}

static void report(const char *what, emily_linalg_method m, emily_dtype dt, int64_t n, double err, double limit) {
    if (!(err <= limit))
        fprintf(stderr, "  %s (%s, %s, n = %lld): error %.3g > %.3g\n", what, method_names[m], emily_dtype_name(dt),
                (long long)n, err, limit);
}

/* ---- lu, solve, determinant on random matrices ----------------------------- */

static void check_lu(emily_dtype dt, emily_linalg_method m, int64_t batch, int64_t n, const input *A) {
    emily_tensor *p = NULL, *l = NULL, *u = NULL;
    CHECK_OK(emily_lu_opts(A->t, 1e-10, m, &p, &l, &u));
    double complex *P = t_cvals(p), *L = t_cvals(l), *U = t_cvals(u);
    double complex *lu = malloc((size_t)(n * n) * sizeof *lu), *plu = malloc((size_t)(n * n) * sizeof *plu);
    double err = 0;
    bool shape_ok = true;
    for (int64_t b = 0; P && L && U && A->ar && b < batch; b++) {
        const double complex *Lb = L + b * n * n, *Ub = U + b * n * n;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                if (i == j && Lb[i * n + j] != 1) shape_ok = false;
                if (i < j && Lb[i * n + j] != 0) shape_ok = false;
                if (i > j && Ub[i * n + j] != 0) shape_ok = false;
            }
        c_matmul(Lb, Ub, lu, n, n, n);
        c_matmul(P + b * n * n, lu, plu, n, n, n);
        double e = rel_diff(plu, A->ar + b * n * n, n * n);
        if (!(e <= err)) err = e;
    }
    CHECK(P && L && U && shape_ok);
    report("p l u = a", m, dt, n, err, tol(dt, n));
    CHECK(err <= tol(dt, n));
    free(lu);
    free(plu);
    free(P);
    free(L);
    free(U);
    RELEASE(p, l, u);
}

TEST(lu_random_complex) { over_square_cases(true, make_random, check_lu); }

TEST(solve_random_complex) {
    for (int d = 0; d < 2; d++)
        for (int m = 0; m < 3; m++)
            for (int c = 0; c < NCASES; c++)
                for (int vec = 0; vec < 2; vec++) {
                    int64_t batch, n, shape[3], bshape[3];
                    int rank = square_case(c, &batch, &n, shape);
                    int64_t cols = vec ? 1 : 2;
                    int brank = vec ? rank - 1 : fill_shape(batch, n, cols, bshape);
                    if (vec) {
                        bshape[0] = batch == 1 ? n : batch;
                        bshape[1] = n;
                    }
                    input A = input_of(ctypes[d], rank, shape, random_matrices(batch, n));
                    input B = input_of(ctypes[d], brank, bshape, random_values(batch * n * cols));
                    emily_tensor *x = NULL;
                    CHECK_OK(emily_solve_opts(A.t, B.t, methods[m], &x));
                    double complex *X = t_cvals(x), *ax = malloc((size_t)(n * cols) * sizeof *ax);
                    double err = X ? 0 : INFINITY;
                    for (int64_t k = 0; X && k < batch; k++) {
                        c_matmul(A.ar + k * n * n, X + k * n * cols, ax, n, n, cols);
                        double e = rel_diff(ax, B.ar + k * n * cols, n * cols);
                        if (!(e <= err)) err = e;
                    }
                    /* a x = b within the conditioning of these random matrices */
                    double limit = tol(ctypes[d], n) * 50;
                    report(vec ? "solve (vector b)" : "solve (matrix b)", methods[m], ctypes[d], n, err, limit);
                    CHECK(err <= limit);
                    free(X);
                    free(ax);
                    input_free(&A);
                    input_free(&B);
                    emily_tensor_release(x);
                }
}

/* det by cofactor expansion along the first row (n <= 6: 720 terms). */
static double complex det_ref(const double complex *a, int64_t n) {
    if (n == 1) return a[0];
    double complex sum = 0, *minor = malloc((size_t)((n - 1) * (n - 1)) * sizeof *minor);
    for (int64_t c = 0; c < n; c++) {
        for (int64_t i = 1; i < n; i++)
            for (int64_t j = 0, k = 0; j < n; j++)
                if (j != c) minor[(i - 1) * (n - 1) + k++] = a[i * n + j];
        double complex t = a[c] * det_ref(minor, n - 1);
        sum += c % 2 ? -t : t;
    }
    free(minor);
    return sum;
}

static void check_determinant(emily_dtype dt, emily_linalg_method m, int64_t batch, int64_t n, const input *A) {
    emily_tensor *det = NULL;
    CHECK_OK(emily_determinant_opts(A->t, m, &det));
    double complex *D = t_cvals(det);
    double err = D ? 0 : INFINITY;
    for (int64_t b = 0; D && b < batch; b++) {
        double complex want = det_ref(A->ar + b * n * n, n);
        double e = cabs(D[b] - want) / (cabs(want) > 1 ? cabs(want) : 1);
        if (!(e <= err)) err = e;
    }
    report("determinant", m, dt, n, err, tol(dt, n) * 10);
    CHECK(err <= tol(dt, n) * 10);
    free(D);
    emily_tensor_release(det);
}

TEST(determinant_random_complex) { over_square_cases(true, make_random, check_determinant); }

/* ---- triangular_solve -------------------------------------------------------- */

/* Every option: lower/upper, left_side or not, transform_a :none,
 * :transpose, :conjugate (which conjugates without transposing, as Nx),
 * b a vector or a matrix; one matrix and a batch. */
/* Random matrices with a strong diagonal: well-conditioned triangles. */
static void make_strong_diagonal(double complex *a, int64_t batch, int64_t n) {
    make_random(a, batch, n);
    for (int64_t k = 0; k < batch; k++)
        for (int64_t i = 0; i < n; i++) a[k * n * n + i * n + i] += 2 * (1 + I);
}

static void check_triangular_solve(emily_dtype dt, emily_linalg_method m, int64_t batch, int64_t n, const input *A) {
    (void)m;
    for (int lower = 0; lower < 2; lower++)
        for (int left = 0; left < 2; left++)
            for (int tr = 0; tr < 3; tr++)
                for (int vec = 0; vec < 2; vec++) {
                    int64_t other = 3, bshape[3];
                    /* b: [n] (vector), [n, 3] (left) or [3, n] (right), per matrix */
                    int64_t rows = vec ? 1 : left ? n : other, cols = vec ? n : left ? other : n;
                    int brank;
                    if (vec) {
                        brank = batch == 1 ? 1 : 2;
                        bshape[0] = batch == 1 ? n : batch;
                        bshape[1] = n;
                    } else {
                        brank = fill_shape(batch, rows, cols, bshape);
                    }
                    input B = input_of(dt, brank, bshape, random_values(batch * rows * cols));
                    emily_tensor *x = NULL;
                    CHECK_OK(emily_triangular_solve(A->t, B.t, left, lower, (emily_transform_a)tr, &x));
                    double complex *X = t_cvals(x), *op = malloc((size_t)(n * n) * sizeof *op);
                    double complex *got = malloc((size_t)(rows * cols) * sizeof *got);
                    double err = X ? 0 : INFINITY;
                    for (int64_t k = 0; X && k < batch; k++) {
                        const double complex *ak = A->ar + k * n * n;
                        /* op(a): the triangle read, then transposed or conjugated */
                        for (int64_t i = 0; i < n; i++)
                            for (int64_t j = 0; j < n; j++) {
                                int64_t si = tr == 1 ? j : i, sj = tr == 1 ? i : j;
                                bool in = lower ? sj <= si : sj >= si;
                                double complex v = in ? ak[si * n + sj] : 0;
                                op[i * n + j] = tr == 2 ? conj(v) : v;
                            }
                        const double complex *xk = X + k * rows * cols;
                        /* a vector b is a column (left) or a row (right) */
                        if (left) c_matmul(op, xk, got, n, n, vec ? 1 : cols);
                        else c_matmul(xk, op, got, vec ? 1 : rows, n, n);
                        double e = rel_diff(got, B.ar + k * rows * cols, rows * cols);
                        if (!(e <= err)) err = e;
                    }
                    if (!(err <= tol(dt, n)))
                        fprintf(stderr, "  triangular_solve %s n %lld lower %d left %d transform %d vector %d: %.3g\n",
                                emily_dtype_name(dt), (long long)n, lower, left, tr, vec, err);
                    CHECK(err <= tol(dt, n));
                    free(X);
                    free(op);
                    free(got);
                    input_free(&B);
                    emily_tensor_release(x);
                }
}

TEST(triangular_solve_random_complex) { over_square_cases(false, make_strong_diagonal, check_triangular_solve); }

/* ---- qr -------------------------------------------------------------------- */

TEST(qr_random_complex) {
    /* square, tall and wide; one matrix and a batch */
    const int64_t dims[6][3] = {{1, 1, 1}, {3, 3, 1}, {5, 3, 1}, {3, 5, 1}, {6, 6, 1}, {4, 3, 2}};
    for (int d = 0; d < 2; d++)
        for (int mth = 0; mth < 3; mth++)
            for (int c = 0; c < 6; c++)
                for (int mode = 0; mode < 2; mode++) {
                    int64_t m = dims[c][0], n = dims[c][1], batch = dims[c][2], shape[3];
                    int rank = fill_shape(batch, m, n, shape);
                    int64_t k = m < n ? m : n, qc = mode ? m : k;
                    input A = input_of(ctypes[d], rank, shape, random_values(batch * m * n));
                    emily_tensor *q = NULL, *r = NULL;
                    CHECK_OK(emily_qr_opts(A.t, (emily_qr_mode)mode, 1e-10, methods[mth], &q, &r));
                    double complex *Q = t_cvals(q), *R = t_cvals(r), *qr = malloc((size_t)(m * n) * sizeof *qr);
                    double err = Q && R ? 0 : INFINITY, uerr = 0;
                    for (int64_t b = 0; Q && R && b < batch; b++) {
                        c_matmul(Q + b * m * qc, R + b * qc * n, qr, m, qc, n);
                        double e = rel_diff(qr, A.ar + b * m * n, m * n);
                        if (!(e <= err)) err = e;
                        e = unitarity(Q + b * m * qc, m, qc);
                        if (!(e <= uerr)) uerr = e;
                    }
                    report("q r = a", methods[mth], ctypes[d], m, err, tol(ctypes[d], m));
                    report("q^H q = I", methods[mth], ctypes[d], m, uerr, tol(ctypes[d], m));
                    CHECK(err <= tol(ctypes[d], m) && uerr <= tol(ctypes[d], m));
                    free(Q);
                    free(R);
                    free(qr);
                    input_free(&A);
                    emily_tensor_release(q);
                    emily_tensor_release(r);
                }
}

/* ---- eigh ------------------------------------------------------------------- */

/* A Hermitian n x n matrix with eigenvalues 1..n (well separated, so
 * that every method's iteration converges): H diag(1..n) H^H with H a
 * complex Householder reflection I - 2 v v^H / |v|^2. */
static void random_hermitian(double complex *a, int64_t n) {
    double complex v[8];
    double nv = 0;
    for (int64_t i = 0; i < n; i++) {
        v[i] = crand();
        nv += creal(v[i] * conj(v[i]));
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double complex s = 0;
            for (int64_t l = 0; l < n; l++) {
                double complex hil = (i == l) - 2 * v[i] * conj(v[l]) / nv;
                double complex hjl = (j == l) - 2 * v[j] * conj(v[l]) / nv;
                s += hil * (double)(l + 1) * conj(hjl);
            }
            a[i * n + j] = s;
        }
    /* exactly Hermitian: real diagonal, mirrored triangle */
    for (int64_t i = 0; i < n; i++) {
        a[i * n + i] = creal(a[i * n + i]);
        for (int64_t j = 0; j < i; j++) a[i * n + j] = conj(a[j * n + i]);
    }
}

/* Hermitian matrices with eigenvalues 1..n (random_hermitian). */
static void make_hermitian(double complex *a, int64_t batch, int64_t n) {
    for (int64_t b = 0; b < batch; b++) random_hermitian(a + b * n * n, n);
}

static void check_eigh(emily_dtype dt, emily_linalg_method m, int64_t batch, int64_t n, const input *A) {
    emily_tensor *w = NULL, *v = NULL;
    /* Nx's eps (1.0e-4) stops the reference iterations early; a
     * smaller one makes their residual small enough to test */
    CHECK_OK(emily_eigh_opts(A->t, 1e-12, 1000, m, &w, &v));
    double complex *W = t_cvals(w), *V = t_cvals(v);
    double complex *av = malloc((size_t)(n * n) * sizeof *av), *vw = malloc((size_t)(n * n) * sizeof *vw);
    double err = W && V ? 0 : INFINITY, uerr = 0, werr = 0;
    for (int64_t b = 0; W && V && b < batch; b++) {
        const double complex *Vb = V + b * n * n, *Wb = W + b * n;
        c_matmul(A->ar + b * n * n, Vb, av, n, n, n);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) vw[i * n + j] = Vb[i * n + j] * Wb[j];
        double e = rel_diff(av, vw, n * n);
        if (!(e <= err)) err = e;
        e = unitarity(Vb, n, n);
        if (!(e <= uerr)) uerr = e;
        /* the eigenvalues of a Hermitian matrix are real: 1..n */
        for (int64_t j = 0; j < n; j++) {
            double near = 1e9;
            for (int64_t k = 1; k <= n; k++)
                if (cabs(Wb[j] - (double)k) < near) near = cabs(Wb[j] - (double)k);
            if (!(near <= werr)) werr = near;
        }
    }
    /* Nx's Jacobi (the reference method) levels off near 1e-6 in
     * f64 whatever :eps is, for real input too */
    double limit = m == EMILY_LINALG_REFERENCE ? 1e-4 : tol(dt, n) * 10;
    report("a v = v diag(w)", m, dt, n, err, limit);
    report("v^H v = I", m, dt, n, uerr, limit);
    report("w = 1..n", m, dt, n, werr, limit * n);
    CHECK(err <= limit && uerr <= limit && werr <= limit * n);
    free(W);
    free(V);
    free(av);
    free(vw);
    emily_tensor_release(w);
    emily_tensor_release(v);
}

TEST(eigh_random_complex) { over_square_cases(true, make_hermitian, check_eigh); }

/* ---- cholesky, svd ------------------------------------------------------------- */

/* Hermitian positive definite matrices: g^H g + n I, g random. */
static void make_positive_definite(double complex *a, int64_t batch, int64_t n) {
    double complex *g = random_matrices(batch, n), *gh = malloc((size_t)(n * n) * sizeof *gh);
    for (int64_t b = 0; b < batch; b++) {
        adjoint(g + b * n * n, gh, n, n);
        c_matmul(gh, g + b * n * n, a + b * n * n, n, n, n);
        for (int64_t i = 0; i < n; i++) {
            a[b * n * n + i * n + i] = creal(a[b * n * n + i * n + i]) + (double)n;
            for (int64_t j = 0; j < i; j++) a[b * n * n + i * n + j] = conj(a[b * n * n + j * n + i]);
        }
    }
    free(g);
    free(gh);
}

static void check_cholesky(emily_dtype dt, emily_linalg_method m, int64_t batch, int64_t n, const input *A) {
    (void)m;
    emily_tensor *l = NULL;
    CHECK_OK(emily_cholesky(A->t, &l));
    double complex *L = t_cvals(l), *lh = malloc((size_t)(n * n) * sizeof *lh);
    double complex *llh = malloc((size_t)(n * n) * sizeof *llh);
    double err = L ? 0 : INFINITY;
    bool lower = true;
    for (int64_t b = 0; L && b < batch; b++) {
        const double complex *Lb = L + b * n * n;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = i + 1; j < n; j++) lower = lower && Lb[i * n + j] == 0;
        adjoint(Lb, lh, n, n);
        c_matmul(Lb, lh, llh, n, n, n);
        double e = rel_diff(llh, A->ar + b * n * n, n * n);
        if (!(e <= err)) err = e;
    }
    /* Nx divides by l_jj + 1e-10: a relative 1e-10 departure */
    double limit = tol(dt, n) + 1e-9;
    if (!(err <= limit)) fprintf(stderr, "  cholesky %s n %lld: %.3g\n", emily_dtype_name(dt), (long long)n, err);
    CHECK(lower && err <= limit);
    free(L);
    free(lh);
    free(llh);
    emily_tensor_release(l);
}

TEST(cholesky_random_complex) { over_square_cases(false, make_positive_definite, check_cholesky); }

TEST(svd_refuses_complex) {
    int64_t s[2] = {2, 2};
    const double complex a[4] = {1 + I, 2, -I, 3};
    for (int d = 0; d < 2; d++)
        for (int m = 0; m < 3; m++)
            for (int full = 0; full < 2; full++) {
                emily_tensor *t = ctensor(ctypes[d], 2, s, a), *u = NULL, *sv = NULL, *vt = NULL;
                CHECK_ERR(emily_svd_opts(t, full, 100, methods[m], &u, &sv, &vt), EMILY_ERR_TYPE, "complex");
                CHECK(!u && !sv && !vt);
                emily_tensor_release(t);
            }
}

RUN_TESTS("linalg_complex", CASE(lu_random_complex), CASE(solve_random_complex), CASE(determinant_random_complex),
          CASE(triangular_solve_random_complex), CASE(qr_random_complex), CASE(eigh_random_complex),
          CASE(cholesky_random_complex), CASE(svd_refuses_complex))
