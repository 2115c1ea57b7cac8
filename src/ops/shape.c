/* Shape ops that are views: reshape (when the strides allow it), squeeze,
 * broadcast, transpose, reverse and slice. Each builds a new tensor
 * header over the input's buffer (emi_tensor_view): no kernel runs,
 * so they work on every device. The copying shape ops (pad,
 * concatenate, stack, put_slice) live in shape_copy.c. */
#include <stdlib.h>
#include <string.h>
#include "ops/common.h"

/* Scratch shape/stride arrays: 2 * n entries (n >= 0). */
static int64_t *scratch(const char *op, int n, emily_status *s) {
    int64_t *p = malloc(sizeof(int64_t) * (2 * (size_t)(n > 0 ? n : 0) + 2));
    *s = p ? EMILY_OK : emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
    return p;
}

static emily_status check_input(const char *op, const emily_tensor *t, emily_tensor **out) {
    const emily_engine *e;
    return emi_check_inputs(op, out, 1, &t, (const char *const[]){"tensor"}, &e);
}

/* ---- reshape ------------------------------------------------------------ */

/* Strides that let a tensor of (t->shape, t->strides) be read as `shape`
 * without moving data; false when no such strides exist (the layout
 * would have to change). Sizes are equal and nonzero. */
static bool reshape_strides(const emily_tensor *t, int rank, const int64_t *shape, int64_t *strides, int64_t *tmp) {
    /* the input's dims of size > 1 */
    int64_t *od = tmp, *os = tmp + t->rank;
    int m = 0;
    for (int i = 0; i < t->rank; i++)
        if (t->shape[i] != 1) {
            od[m] = t->shape[i];
            os[m] = t->strides[i];
            m++;
        }
    int i = 0, j = 0;
    while (j < rank) {
        if (shape[j] == 1) {
            strides[j] = 0;
            j++;
            continue;
        }
        /* the smallest groups of old dims i..i2-1 and new dims j..j2-1
         * with equal products */
        int64_t pn = shape[j], po = od[i];
        int j2 = j + 1, i2 = i + 1;
        while (pn != po) {
            if (pn < po) pn *= shape[j2++];
            else po *= od[i2++];
        }
        /* the old group must be one strided run */
        for (int k = i; k < i2 - 1; k++)
            if (os[k] != os[k + 1] * od[k + 1]) return false;
        int64_t st = os[i2 - 1];
        for (int k = j2 - 1; k >= j; k--) {
            strides[k] = st;
            st *= shape[k];
        }
        i = i2;
        j = j2;
    }
    return true;
}

emily_status emily_reshape(const emily_tensor *t, int rank, const int64_t *shape, emily_tensor **out) {
    const char *op = "reshape";
    emily_status s = check_input(op, t, out);
    if (s) return s;
    if (rank < 0 || (rank > 0 && !shape))
        return emily_error(EMILY_ERR_SHAPE, "reshape: invalid rank %d or NULL shape", rank);
    int64_t size;
    if (!emi_shape_size(rank, shape, &size) || size != t->size) {
        char b[256];
        return emily_error(EMILY_ERR_SHAPE, "reshape: cannot reshape a tensor of shape %s (%lld elements) to %s",
                           EMILY_SHAPE_STR(t), (long long)t->size, emi_shape_str(rank, shape, b, sizeof b));
    }
    int64_t *strides = scratch(op, rank + t->rank, &s);
    if (!strides) return s;
    int64_t *tmp = strides + rank;
    if (size == 0) {
        s = emi_tensor_view(t, rank, shape, NULL, t->offset, out);
    } else if (reshape_strides(t, rank, shape, strides, tmp)) {
        s = emi_tensor_view(t, rank, shape, strides, t->offset, out);
    } else {
        emily_tensor *c;
        s = emily_contiguous(t, &c);
        if (!s) {
            s = emi_tensor_view(c, rank, shape, NULL, c->offset, out);
            emily_tensor_release(c);
        }
    }
    free(strides);
    return s;
}

/* ---- squeeze ------------------------------------------------------------ */

emily_status emily_squeeze(const emily_tensor *t, int naxes, const int *axes, emily_tensor **out) {
    const char *op = "squeeze";
    emily_status s = check_input(op, t, out);
    if (s) return s;
    if (axes && naxes < 0) return emily_error(EMILY_ERR_AXIS, "squeeze: negative axis count %d", naxes);
    if (!axes && naxes > 0) return emily_error(EMILY_ERR_ARGUMENT, "squeeze: axes is NULL");
    emi_scratch sc;
    if ((s = emi_scratch_get(op, &sc, 2 * (size_t)t->rank + 2, (size_t)t->rank + 1))) return s;
    int64_t *buf = sc.ints;
    bool *mask = sc.flags;
    if (axes) {
        s = emi_norm_axes(op, naxes, axes, t->rank, NULL, mask);
        for (int i = 0; !s && i < t->rank; i++)
            if (mask[i] && t->shape[i] != 1)
                s = emily_error(EMILY_ERR_SHAPE,
                                "squeeze: cannot squeeze axis %d of size %lld (shape %s), only axes of size 1", i,
                                (long long)t->shape[i], EMILY_SHAPE_STR(t));
    } else {
        for (int i = 0; i < t->rank; i++) mask[i] = t->shape[i] == 1;
    }
    if (!s) {
        int64_t *shape = buf, *strides = buf + t->rank;
        int r = 0;
        for (int i = 0; i < t->rank; i++)
            if (!mask[i]) {
                shape[r] = t->shape[i];
                strides[r] = t->strides[i];
                r++;
            }
        s = emi_tensor_view(t, r, shape, strides, t->offset, out);
    }
    emi_scratch_free(&sc);
    return s;
}

/* ---- broadcast ---------------------------------------------------------- */

emily_status emily_broadcast(const emily_tensor *t, int rank, const int64_t *shape, const int *axes,
                             emily_tensor **out) {
    const char *op = "broadcast";
    emily_status s = check_input(op, t, out);
    if (s) return s;
    if (rank < 0 || (rank > 0 && !shape))
        return emily_error(EMILY_ERR_SHAPE, "broadcast: invalid rank %d or NULL shape", rank);
    int64_t size;
    if (!emi_shape_size(rank, shape, &size))
        return emily_error(EMILY_ERR_SHAPE,
                           "broadcast: invalid target shape (negative dimension or too many elements)");
    char b[256];
    if (t->rank > rank)
        return emily_error(EMILY_ERR_SHAPE,
                           "broadcast: cannot broadcast a tensor of shape %s to the lower rank shape %s",
                           EMILY_SHAPE_STR(t), emi_shape_str(rank, shape, b, sizeof b));
    int64_t *strides = scratch(op, rank, &s);
    if (!strides) return s;
    for (int i = 0; i < rank; i++) strides[i] = 0;
    int last = -1;
    for (int i = 0; i < t->rank; i++) {
        int a = axes ? axes[i] : rank - t->rank + i;
        if (a < 0) a += rank;
        if (a < 0 || a >= rank) {
            s = emily_error(EMILY_ERR_AXIS, "broadcast: axis %d out of range for the target shape %s", axes[i],
                            emi_shape_str(rank, shape, b, sizeof b));
            break;
        }
        if (a <= last) {
            s = emily_error(EMILY_ERR_AXIS, "broadcast: axes must be increasing, got %d after %d", a, last);
            break;
        }
        last = a;
        if (t->shape[i] == shape[a]) {
            strides[a] = t->strides[i];
        } else if (t->shape[i] != 1) {
            s = emily_error(
                EMILY_ERR_SHAPE,
                "broadcast: cannot broadcast a tensor of shape %s to %s (axis %d of size %lld maps to a dimension of size %lld)",
                EMILY_SHAPE_STR(t), emi_shape_str(rank, shape, b, sizeof b), i, (long long)t->shape[i],
                (long long)shape[a]);
            break;
        }
    }
    if (!s) s = emi_tensor_view(t, rank, shape, strides, t->offset, out);
    free(strides);
    return s;
}

/* ---- transpose ---------------------------------------------------------- */

emily_status emily_transpose(const emily_tensor *t, const int *perm, emily_tensor **out) {
    const char *op = "transpose";
    emily_status s = check_input(op, t, out);
    if (s) return s;
    int r = t->rank;
    int *p = malloc(sizeof(int) * ((size_t)r + 1));
    int64_t *buf = scratch(op, r, &s);
    if (!p || !buf) {
        free(p);
        free(buf);
        return emily_error(EMILY_ERR_MEMORY, "transpose: out of host memory");
    }
    if (perm) {
        s = emi_norm_axes(op, r, perm, r, p, NULL);
    } else {
        for (int i = 0; i < r; i++) p[i] = r - 1 - i;
    }
    if (!s) {
        int64_t *shape = buf, *strides = buf + r;
        for (int i = 0; i < r; i++) {
            shape[i] = t->shape[p[i]];
            strides[i] = t->strides[p[i]];
        }
        s = emi_tensor_view(t, r, shape, strides, t->offset, out);
    }
    free(p);
    free(buf);
    return s;
}

/* ---- reverse ------------------------------------------------------------ */

emily_status emily_reverse(const emily_tensor *t, int naxes, const int *axes, emily_tensor **out) {
    const char *op = "reverse";
    emily_status s = check_input(op, t, out);
    if (s) return s;
    if (naxes < 0 || (naxes > 0 && !axes))
        return emily_error(EMILY_ERR_ARGUMENT, "reverse: invalid axis count %d or NULL axes", naxes);
    emi_scratch sc;
    if ((s = emi_scratch_get(op, &sc, 2 * (size_t)t->rank + 2, (size_t)t->rank + 1))) return s;
    int64_t *strides = sc.ints;
    bool *mask = sc.flags;
    s = emi_norm_axes(op, naxes, axes, t->rank, NULL, mask);
    if (!s) {
        int64_t offset = t->offset;
        for (int i = 0; i < t->rank; i++) {
            strides[i] = t->strides[i];
            if (mask[i] && t->shape[i] > 1) {
                offset += (t->shape[i] - 1) * t->strides[i];
                strides[i] = -t->strides[i];
            }
        }
        s = emi_tensor_view(t, t->rank, t->shape, strides, offset, out);
    }
    emi_scratch_free(&sc);
    return s;
}

/* ---- slice -------------------------------------------------------------- */

/* Nx clamps a start index into [0, dim - length]. */
static int64_t clamp_start(int64_t start, int64_t dim, int64_t len) {
    if (start > dim - len) start = dim - len;
    if (start < 0) start = 0;
    return start;
}

emily_status emily_slice(const emily_tensor *t, const int64_t *starts, const int64_t *lengths, const int64_t *strides,
                         emily_tensor **out) {
    const char *op = "slice";
    emily_status s = check_input(op, t, out);
    if (s) return s;
    if (t->rank > 0 && (!starts || !lengths))
        return emily_error(EMILY_ERR_ARGUMENT, "slice: start indices or lengths are NULL");
    for (int i = 0; i < t->rank; i++) {
        int64_t st = strides ? strides[i] : 1;
        if (lengths[i] < 0 || lengths[i] > t->shape[i])
            return emily_error(EMILY_ERR_SHAPE, "slice: length %lld at axis %d is out of range for shape %s",
                               (long long)lengths[i], i, EMILY_SHAPE_STR(t));
        if (st < 1)
            return emily_error(EMILY_ERR_ARGUMENT, "slice: stride at axis %d must be at least 1, got %lld", i,
                               (long long)st);
    }
    int64_t *buf = scratch(op, t->rank, &s);
    if (!buf) return s;
    int64_t *shape = buf, *vstrides = buf + t->rank;
    int64_t offset = t->offset;
    for (int i = 0; i < t->rank; i++) {
        int64_t st = strides ? strides[i] : 1;
        int64_t start = clamp_start(starts[i], t->shape[i], lengths[i]);
        shape[i] = lengths[i] == 0 ? 0 : (lengths[i] - 1) / st + 1;
        /* a stride past the length picks one element: its view stride
         * is never used, and the product could overflow */
        vstrides[i] = shape[i] > 1 ? t->strides[i] * st : t->strides[i];
        if (shape[i] > 0) offset += start * t->strides[i];
    }
    s = emi_tensor_view(t, t->rank, shape, vstrides, offset, out);
    free(buf);
    return s;
}
