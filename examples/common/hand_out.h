/* The last step of the example's loaders (bert_load, st_open,
 * tokenizer_load): they build an object step by step, keep the first
 * failure in s, and end here. */
#ifndef EMBED_HAND_OUT_H
#define EMBED_HAND_OUT_H

#include "emily/emily.h"

/* On success hands obj to *out and gives EMILY_OK; on failure frees the
 * partly built obj with free_fn (which takes one) and gives s. A macro so
 * that it keeps each loader's own types (s is read twice). */
#define EMBED_HAND_OUT(s, obj, free_fn, out) ((s) ? (free_fn(obj), (s)) : (*(out) = (obj), EMILY_OK))

#endif
