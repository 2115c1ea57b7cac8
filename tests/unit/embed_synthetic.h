/* test_embed's own model: a tiny BERT with random weights written as a
 * model folder (config.json, model.safetensors mixing f32, f16 and bf16,
 * vocab.txt), and a forward pass for it written here from the model's
 * definition, in double precision, one sentence at a time (no padding):
 * what examples/embed must reproduce without any files from outside. */
#ifndef EMBED_SYNTHETIC_H
#define EMBED_SYNTHETIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { SYN_VOCAB = 40, SYN_HIDDEN = 16, SYN_HEADS = 4, SYN_LAYERS = 2, SYN_FF = 24, SYN_POSITIONS = 12 };
#define SYN_EPS 1e-5

/* One tensor for the writer: name, safetensors dtype ("F32", "F16",
 * "BF16", ...), shape, bytes. */
typedef struct syn_entry {
    const char *name, *dtype;
    int rank;
    int64_t shape[2];
    const void *data;
    size_t nbytes;
} syn_entry;

/* Writes n bytes to dir/name; false on failure. */
bool syn_write_file(const char *dir, const char *name, const void *bytes, size_t n);

/* Writes a safetensors file; false (after a message) on failure. */
bool syn_write_safetensors(const char *path, int n, const syn_entry *entries);

/* The values of a synthetic model, as doubles (exactly what the file holds). */
typedef struct syn_model syn_model;

/* Writes a model with weights from `seed` into dir (which must exist),
 * with tensor names under "bert." when `prefixed`; NULL on failure. */
syn_model *syn_write_model(const char *dir, unsigned seed, bool prefixed);
void syn_free(syn_model *m);

/* The unit-length mean-pooled embedding of one sentence of n ids. */
void syn_embed(const syn_model *m, const int32_t *ids, int n, double out[SYN_HIDDEN]);

/* The vocabulary written to vocab.txt (id = index). */
extern const char *const syn_vocab[SYN_VOCAB];

#endif
