/* Decoding corpus JSON (see ../shared/conformance/README.md) into
 * emily_value trees with tensors on a device, and encoding results.
 * jansson keeps integers and reals apart, as Nx's terms are. */
#ifndef EMILY_JSON_VALUES_H
#define EMILY_JSON_VALUES_H

#include <jansson.h>
#include "emily/emily.h"

/* A decoded tree owns everything it points to. */
typedef struct jv_tree {
    emily_value *root;
    void **allocs;
    size_t nallocs, cap;
    emily_tensor **tensors;
    size_t ntensors, tcap;
} jv_tree;

/* Decodes `json` (an argument, or templates when as_template). Returns 0
 * or -1 with a message in err. */
int jv_decode(jv_tree *tree, const json_t *json, emily_device device, bool as_template, char *err, size_t errsize);
void jv_free(jv_tree *tree);

char *b64_encode(const unsigned char *data, size_t n);
unsigned char *b64_decode(const char *text, size_t *n);

/* {"type":..,"shape":[..],"data":"<base64>"} of a tensor (NULL on error). */
json_t *jv_encode_tensor(const emily_tensor *t);

#endif
