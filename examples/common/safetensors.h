/* A reader of safetensors files (Hugging Face's weight format): an
 * 8-byte little-endian header length, a JSON header naming each tensor's
 * dtype, shape and byte range, then the bytes. The file is mapped read
 * only; tensors are handed to the engine from there. */
#ifndef EMBED_SAFETENSORS_H
#define EMBED_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "emily/emily.h"

#define ST_MAX_RANK 8

typedef struct st_file st_file;

/* One tensor of the file: its bytes stay valid while the file is open. */
typedef struct st_tensor {
    emily_dtype dtype;
    int rank;
    int64_t shape[ST_MAX_RANK];
    const void *data;
    size_t nbytes;
} st_tensor;

/* Opens and checks the header (a clear EMILY_ERR_ARGUMENT naming the file
 * for anything malformed). */
emily_status st_open(const char *path, st_file **out);
void st_close(st_file *f);

bool st_has(const st_file *f, const char *name);

/* Looks `name` up and checks its entry: a dtype Emily has (F64, F32, F16,
 * BF16, I8-I64, U8-U64, BOOL as u8), a shape whose bytes are exactly its
 * range, inside the file. */
emily_status st_get(const st_file *f, const char *name, st_tensor *out);

/* st_get, then the tensor on `device` as f32 (converted by the engine
 * from f16, bf16 or any other type). */
emily_status st_load_f32(const st_file *f, const char *name, emily_device device, emily_tensor **out);

#endif
