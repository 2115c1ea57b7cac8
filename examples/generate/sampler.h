/* Choosing the next token from the logits: greedy (the largest logit,
 * the lowest id on ties, as torch.argmax), or sampled from the softmax
 * at a temperature, cut to the k most likely tokens and to the smallest
 * set whose probability reaches top_p, in Hugging Face's order of those
 * steps (temperature, top-k, top-p). Sampling is reproducible: a seed
 * gives the same tokens on every machine (a 64-bit generator of its own,
 * not rand()). */
#ifndef GENERATE_SAMPLER_H
#define GENERATE_SAMPLER_H

#include <stdint.h>

typedef struct sampler_options {
    double temperature; /* 0: greedy */
    int top_k;          /* 0: no cut */
    double top_p;       /* 1: no cut */
    uint64_t seed;
} sampler_options;

typedef struct sampler_candidate {
    float logit;
    int32_t id;
} sampler_candidate;

typedef struct sampler {
    sampler_options opt;
    uint64_t state;
    int n;                   /* vocabulary size */
    sampler_candidate *cand; /* scratch: tokens by logit */
    double *prob;            /* scratch: their probabilities */
} sampler;

/* Fails (returns -1, message in err) on options out of range or no memory. */
int sampler_init(sampler *s, const sampler_options *opt, int vocab, char *err, size_t errlen);
void sampler_free(sampler *s);

/* The next token for logits[0 .. vocab). NaN logits are never chosen
 * unless every logit is NaN (then token 0). */
int32_t sampler_next(sampler *s, const float *logits);

#endif
