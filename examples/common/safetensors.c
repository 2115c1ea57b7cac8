/* safetensors: map the file, parse the header with jansson, check each
 * entry when it is asked for (so a file holding a type Emily lacks can
 * still give the tensors it does have). */
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "safetensors.h"
#include "hand_out.h"

/* A header larger than this is not a model's (the reference reader
 * refuses 100 MB too). */
#define ST_MAX_HEADER ((uint64_t)100 << 20)

struct st_file {
    char *path;
    const unsigned char *map;
    size_t size;
    const unsigned char *data; /* the byte buffer after the header */
    size_t data_size;
    json_t *header;
};

static emily_status bad(const char *path, const char *what) {
    return emily_error(EMILY_ERR_ARGUMENT, "safetensors: %s: %s", path, what);
}

static emily_status parse_header(st_file *f) {
    if (f->size < 8) return bad(f->path, "shorter than the 8-byte header length");
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | f->map[i];
    if (n > ST_MAX_HEADER || n > f->size - 8) return bad(f->path, "header length beyond the file");
    json_error_t err;
    f->header = json_loadb((const char *)f->map + 8, (size_t)n, 0, &err);
    if (!f->header || !json_is_object(f->header))
        return emily_error(EMILY_ERR_ARGUMENT, "safetensors: %s: header is not a JSON object: %s", f->path,
                           f->header ? "" : err.text);
    f->data = f->map + 8 + n;
    f->data_size = f->size - 8 - (size_t)n;
    return EMILY_OK;
}

emily_status st_open(const char *path, st_file **out) {
    *out = NULL;
    st_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return emily_error(EMILY_ERR_MEMORY, "safetensors: out of memory");
    }
    emily_status s = EMILY_OK;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        s = bad(path, "cannot be opened");
    } else if (!S_ISREG(st.st_mode) || st.st_size <= 0) {
        s = bad(path, "not a regular, non-empty file");
    } else {
        f->size = (size_t)st.st_size;
        void *map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) s = bad(path, "cannot be mapped");
        else f->map = map;
    }
    if (fd >= 0) close(fd);
    if (!s) s = parse_header(f);
    return EMBED_HAND_OUT(s, f, st_close, out);
}

void st_close(st_file *f) {
    if (!f) return;
    if (f->map) munmap((void *)f->map, f->size);
    json_decref(f->header);
    free(f->path);
    free(f);
}

bool st_has(const st_file *f, const char *name) { return json_object_get(f->header, name) != NULL; }

static bool dtype_of(const char *name, emily_dtype *out) {
    static const struct {
        const char *name;
        emily_dtype dtype;
    } known[] = {{"F64", EMILY_F64}, {"F32", EMILY_F32}, {"F16", EMILY_F16}, {"BF16", EMILY_BF16}, {"I64", EMILY_S64},
                 {"I32", EMILY_S32}, {"I16", EMILY_S16}, {"I8", EMILY_S8},   {"U64", EMILY_U64},   {"U32", EMILY_U32},
                 {"U16", EMILY_U16}, {"U8", EMILY_U8},   {"BOOL", EMILY_U8}};
    for (size_t i = 0; name && i < sizeof known / sizeof *known; i++) {
        if (strcmp(name, known[i].name) == 0) {
            *out = known[i].dtype;
            return true;
        }
    }
    return false;
}

static emily_status bad_entry(const st_file *f, const char *name, const char *what) {
    return emily_error(EMILY_ERR_ARGUMENT, "safetensors: %s: tensor %s: %s", f->path, name, what);
}

emily_status st_get(const st_file *f, const char *name, st_tensor *out) {
    memset(out, 0, sizeof *out);
    const json_t *e = json_object_get(f->header, name);
    if (!e || strcmp(name, "__metadata__") == 0) return bad_entry(f, name, "not in the file");
    const char *dt = json_string_value(json_object_get(e, "dtype"));
    const json_t *shape = json_object_get(e, "shape");
    const json_t *offs = json_object_get(e, "data_offsets");
    if (!dtype_of(dt, &out->dtype))
        return emily_error(EMILY_ERR_TYPE, "safetensors: %s: tensor %s: dtype %s is not supported", f->path, name,
                           dt ? dt : "(missing)");
    if (!json_is_array(shape) || json_array_size(shape) > ST_MAX_RANK)
        return bad_entry(f, name, "shape missing or of rank above 8");
    out->rank = (int)json_array_size(shape);
    uint64_t count = 1;
    for (int i = 0; i < out->rank; i++) {
        const json_t *d = json_array_get(shape, (size_t)i);
        if (!json_is_integer(d) || json_integer_value(d) < 0 || json_integer_value(d) > INT32_MAX)
            return bad_entry(f, name, "a dimension is not an integer in [0, 2^31)");
        out->shape[i] = json_integer_value(d);
        if (out->shape[i] && count > UINT64_MAX / 16 / (uint64_t)out->shape[i])
            return bad_entry(f, name, "too many elements");
        count *= (uint64_t)out->shape[i];
    }
    const json_t *b = json_array_get(offs, 0), *en = json_array_get(offs, 1);
    if (!json_is_array(offs) || json_array_size(offs) != 2 || !json_is_integer(b) || !json_is_integer(en))
        return bad_entry(f, name, "data_offsets is not [begin, end]");
    json_int_t begin = json_integer_value(b), end = json_integer_value(en);
    if (begin < 0 || end < begin || (uint64_t)end > f->data_size)
        return bad_entry(f, name, "data_offsets outside the file");
    if ((uint64_t)(end - begin) != count * emily_dtype_size(out->dtype))
        return bad_entry(f, name, "data_offsets do not hold exactly the shape's bytes");
    out->data = f->data + begin;
    out->nbytes = (size_t)(end - begin);
    return EMILY_OK;
}

emily_status st_load_f32(const st_file *f, const char *name, emily_device device, emily_tensor **out) {
    *out = NULL;
    st_tensor t;
    emily_status s = st_get(f, name, &t);
    if (s) return s;
    emily_tensor *raw = NULL;
    s = emily_from_binary(device, t.dtype, t.rank, t.shape, t.data, t.nbytes, &raw);
    if (s || t.dtype == EMILY_F32) {
        *out = raw;
        return s;
    }
    s = emily_as_type(raw, EMILY_F32, out);
    emily_tensor_release(raw);
    return s;
}
