/* What the property checks share (property_math.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json_values.h"
#include "property_math.h"
#include "../float_parts.h"

double zabs(zd a) { return hypot(a.re, a.im); }

zd *pm_load(const emily_tensor *t) {
    emily_tensor *c = NULL;
    if (emily_as_type(t, EMILY_C128, &c)) return NULL;
    size_t n = (size_t)emily_tensor_size(c);
    zd *out = malloc((n ? n : 1) * sizeof *out);
    if (out && emily_to_binary(c, out, n * sizeof *out)) {
        free(out);
        out = NULL;
    }
    emily_tensor_release(c);
    return out;
}

zd pm_row_col(const zd *a, int64_t lda, const zd *b, int64_t ldb, int64_t i, int64_t j, int64_t len) {
    zd s = {0, 0};
    for (int64_t l = 0; l < len; l++) {
        zd p = zmul(a[i * lda + l], b[l * ldb + j]);
        s.re += p.re;
        s.im += p.im;
    }
    return s;
}

zd pm_row_row_conj(const zd *x, int64_t ld, int64_t i, int64_t j, int64_t len) {
    zd s = {0, 0};
    for (int64_t c = 0; c < len; c++) {
        zd p = zmul(x[i * ld + c], zconj(x[j * ld + c]));
        s.re += p.re;
        s.im += p.im;
    }
    return s;
}

zd *pm_load_expected(const json_t *expected, size_t k, int64_t want_size) {
    const json_t *r = json_is_array(expected) ? json_array_get(expected, k) : k == 0 ? expected : NULL;
    if (!r) return NULL;
    emily_dtype dt = emily_dtype_from_name(json_string_value(json_object_get(r, "type")));
    const json_t *shp = json_object_get(r, "shape");
    if (dt == EMILY_DTYPE_AUTO || !json_is_array(shp) || json_array_size(shp) > 16) return NULL;
    int64_t shape[16];
    int rank = (int)json_array_size(shp);
    for (int i = 0; i < rank; i++) shape[i] = (int64_t)json_integer_value(json_array_get(shp, i));
    size_t nbytes;
    unsigned char *data = b64_decode(json_string_value(json_object_get(r, "data")), &nbytes);
    if (!data) return NULL;
    emily_tensor *t = NULL;
    zd *out = NULL;
    if (!emily_from_binary(EMILY_CPU, dt, rank, shape, data, nbytes, &t) && emily_tensor_size(t) == want_size)
        out = pm_load(t);
    emily_tensor_release(t);
    free(data);
    return out;
}

bool pm_fail(pm_check *c, const char *fmt, ...) {
    if (c->ok) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->msg, c->size, fmt, ap);
        va_end(ap);
    }
    c->ok = false;
    return false;
}

double pm_unit_roundoff(emily_dtype t) { return fp_unit_roundoff(emily_type_to_real(t)); }

double pm_fro(const zd *a, int64_t count) {
    double s = 0;
    for (int64_t i = 0; i < count; i++) s += a[i].re * a[i].re + a[i].im * a[i].im;
    return sqrt(s);
}

double pm_max_abs(const zd *a, int64_t count) {
    double m = 0;
    for (int64_t i = 0; i < count; i++) m = fmax(m, zabs(a[i]));
    return m;
}

int64_t pm_batch_count(const emily_tensor *a) {
    int64_t b = 1;
    for (int i = 0; i < emily_tensor_rank(a) - 2; i++) b *= emily_tensor_shape(a)[i];
    return b;
}

const pm_op *pm_op_find(const pm_op *rows, size_t n, const char *op) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].op, op) == 0) return &rows[i];
    return NULL;
}

const emily_value *pm_opts(const emily_value *args, size_t nargs) {
    return nargs > 1 && args[nargs - 1].kind == EMILY_V_OPTS ? &args[nargs - 1] : NULL;
}

const emily_value *pm_opt(const emily_value *opts, const char *key) {
    if (!opts) return NULL;
    for (size_t i = 0; i < opts->n; i++)
        if (opts->keys[i] && strcmp(opts->keys[i], key) == 0) return &opts->items[i];
    return NULL;
}

double pm_opt_number(const emily_value *opts, const char *key, double dflt) {
    const emily_value *v = pm_opt(opts, key);
    if (v && v->kind == EMILY_V_FLOAT) return v->f;
    if (v && v->kind == EMILY_V_INT) return (double)v->i;
    return dflt;
}

bool pm_opt_bool(const emily_value *opts, const char *key, bool dflt) {
    const emily_value *v = pm_opt(opts, key);
    return v && v->kind == EMILY_V_BOOL ? v->b : dflt;
}

static zd zdiv(zd a, zd b) {
    double d = b.re * b.re + b.im * b.im;
    return (zd){(a.re * b.re + a.im * b.im) / d, (a.im * b.re - a.re * b.im) / d};
}

double pm_norm_inf(const zd *a, int64_t n) {
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double row = 0;
        for (int64_t j = 0; j < n; j++) row += zabs(a[i * n + j]);
        worst = fmax(worst, row);
    }
    return worst;
}

double pm_inverse_norm_inf(const zd *a, int64_t n) {
    zd *m = malloc((size_t)(n * 2 * n + 1) * sizeof *m);
    if (!m) return INFINITY;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < 2 * n; j++) m[i * 2 * n + j] = j < n ? a[i * n + j] : (zd){j - n == i ? 1 : 0, 0};
    double result = 0;
    for (int64_t k = 0; k < n && result == 0; k++) {
        int64_t p = k;
        for (int64_t i = k + 1; i < n; i++)
            if (zabs(m[i * 2 * n + k]) > zabs(m[p * 2 * n + k])) p = i;
        if (!(zabs(m[p * 2 * n + k]) > 0)) result = INFINITY;
        for (int64_t j = 0; result == 0 && p != k && j < 2 * n; j++) {
            zd t = m[k * 2 * n + j];
            m[k * 2 * n + j] = m[p * 2 * n + j];
            m[p * 2 * n + j] = t;
        }
        for (int64_t i = 0; result == 0 && i < n; i++) {
            if (i == k) continue;
            zd f = zdiv(m[i * 2 * n + k], m[k * 2 * n + k]);
            for (int64_t j = k; j < 2 * n; j++) m[i * 2 * n + j] = zsub(m[i * 2 * n + j], zmul(f, m[k * 2 * n + j]));
        }
    }
    if (result == 0) {
        for (int64_t i = 0; i < n; i++) {
            double row = 0;
            zd d = m[i * 2 * n + i];
            for (int64_t j = n; j < 2 * n; j++) row += zabs(zdiv(m[i * 2 * n + j], d));
            result = fmax(result, row);
        }
    }
    free(m);
    return result;
}
