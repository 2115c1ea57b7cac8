/* One sdpa case of test_sdpa and test_cuda_sdpa: its sizes and options,
 * the shapes of q, k and v they give, and the case's name in messages. */
#ifndef EMILY_TEST_SDPA_SPEC_H
#define EMILY_TEST_SDPA_SPEC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct sdpa_spec {
    int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
    bool causal;
    int mask_kind; /* 0 none, 1 additive, 2 boolean */
    int mr;        /* the mask's rank and shape */
    int64_t mshape[4];
    bool sinks;
} sdpa_spec;

/* q {B, Hq, Sq, D}, k {B, Hkv, Skv, D}, v {B, Hkv, Skv, Dv}. */
static inline void sdpa_spec_shapes(const sdpa_spec *s, int64_t qs[4], int64_t ks[4], int64_t vs[4]) {
    const int64_t q[4] = {s->B, s->Hq, s->Sq, s->D}, k[4] = {s->B, s->Hkv, s->Skv, s->D},
                  v[4] = {s->B, s->Hkv, s->Skv, s->Dv};
    for (int i = 0; i < 4; i++) qs[i] = q[i], ks[i] = k[i], vs[i] = v[i];
}

/* "label B.. Hq.. Hkv.. Sq.. Skv.. D.. Dv..", then causal, the mask's kind
 * and sinks where the case has them. */
static inline void sdpa_spec_name(char *buf, size_t size, const char *label, const sdpa_spec *s) {
    snprintf(buf, size, "%s B%lld Hq%lld Hkv%lld Sq%lld Skv%lld D%lld Dv%lld%s%s%s", label, (long long)s->B,
             (long long)s->Hq, (long long)s->Hkv, (long long)s->Sq, (long long)s->Skv, (long long)s->D,
             (long long)s->Dv, s->causal ? " causal" : "",
             s->mask_kind == 1   ? " additive"
             : s->mask_kind == 2 ? " boolean"
                                 : "",
             s->sinks ? " sinks" : "");
}

#endif
