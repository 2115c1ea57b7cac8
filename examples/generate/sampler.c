/* sampler.h. The generator is SplitMix64 (a 64-bit counter passed through
 * a fixed mixing function): tiny, fast, and good enough to draw one
 * uniform number per token. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "sampler.h"

static uint64_t next_u64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) with 53 random bits */
static double next_unit(uint64_t *state) { return (double)(next_u64(state) >> 11) * 0x1p-53; }

int sampler_init(sampler *s, const sampler_options *opt, int vocab, char *err, size_t errlen) {
    s->cand = NULL;
    s->prob = NULL;
    if (vocab < 1 || !(opt->temperature >= 0) || !isfinite(opt->temperature) || opt->top_k < 0 ||
        !(opt->top_p > 0 && opt->top_p <= 1)) {
        snprintf(err, errlen,
                 "sampler: temperature must be >= 0 (0: greedy), top-k >= 0 (0: all tokens) and "
                 "top-p in (0, 1]");
        return -1;
    }
    s->opt = *opt;
    s->state = opt->seed;
    s->n = vocab;
    if (opt->temperature > 0) {
        s->cand = malloc(sizeof *s->cand * (size_t)vocab);
        s->prob = malloc(sizeof *s->prob * (size_t)vocab);
        if (!s->cand || !s->prob) {
            sampler_free(s);
            snprintf(err, errlen, "sampler: out of memory");
            return -1;
        }
    }
    return 0;
}

void sampler_free(sampler *s) {
    free(s->cand);
    free(s->prob);
    s->cand = NULL;
    s->prob = NULL;
}

static int32_t argmax(const float *logits, int n) {
    int32_t best = -1;
    for (int32_t i = 0; i < n; i++)
        if (!isnan(logits[i]) && (best < 0 || logits[i] > logits[best])) best = i;
    return best < 0 ? 0 : best;
}

static int by_logit_desc(const void *a, const void *b) {
    const sampler_candidate *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return x->id < y->id ? -1 : (x->id > y->id); /* ties: the lower id first */
}

int32_t sampler_next(sampler *s, const float *logits) {
    if (s->opt.temperature == 0) return argmax(logits, s->n);
    int m = 0;
    for (int32_t i = 0; i < s->n; i++)
        if (!isnan(logits[i]) && logits[i] > -INFINITY) s->cand[m++] = (sampler_candidate){logits[i], i};
    if (m == 0) return argmax(logits, s->n);
    qsort(s->cand, (size_t)m, sizeof *s->cand, by_logit_desc);
    if (s->opt.top_k > 0 && s->opt.top_k < m) m = s->opt.top_k;
    /* softmax of logits / temperature over the kept tokens, in double */
    double t = s->opt.temperature, top = s->cand[0].logit / t, z = 0;
    for (int i = 0; i < m; i++) z += s->prob[i] = exp(s->cand[i].logit / t - top);
    /* top-p: the shortest prefix whose mass reaches top_p (at least one token) */
    double mass = 0;
    int keep = 0;
    while (keep < m) {
        mass += s->prob[keep++] / z;
        if (mass >= s->opt.top_p) break;
    }
    double total = 0;
    for (int i = 0; i < keep; i++) total += s->prob[i];
    double r = next_unit(&s->state) * total, acc = 0;
    for (int i = 0; i < keep; i++) {
        acc += s->prob[i];
        if (r < acc) return s->cand[i].id;
    }
    return s->cand[keep - 1].id;
}
