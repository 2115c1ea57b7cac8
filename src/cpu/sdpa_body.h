/* One job of the CPU's sdpa (src/cpu/sdpa.c), for one working type:
 * included once per W with these defined:
 *   W                   float or double
 *   SFX                 f32 or f64 (the function's suffix)
 *   GEMM                cblas_sgemm or cblas_dgemm
 *   ROUND_P(t, x)       a probability rounded to T and read back as W
 *   EXP_ROW(j, x, n)    x[i] = W(exp(x[i])) for n values, in place
 *   STORE(t, o, dst, n) n output values (W) written as T
 * (it undefines them at its end, ready for the next W).
 * The steps and their roundings are emily/ops_fast.h's expression. */
#define SDPA_CAT2(a, b) a##_##b
#define SDPA_CAT(a, b) SDPA_CAT2(a, b)
#define BLOCK_FN SDPA_CAT(block, SFX)
#define ROW_FN SDPA_CAT(softmax_row, SFX)
#define PRAGMA(x) _Pragma(#x)

/* Row i's logits (scores[0, nk)) turned into T-rounded probabilities in
 * place; keys from nvis on are masked (causal). Returns false when the
 * row is fully masked (every key's logit -inf, or Z = 0): its output row
 * is 0. */
static bool ROW_FN(const sdpa_job *j, W *row, int64_t nk, int64_t nvis, int64_t b, int64_t h, int64_t i) {
    const emily_sdpa_params *p = j->p;
    const W s = (W)p->scale, neg_inf = (W)-INFINITY;
    const char *mrow = j->mask ? j->mask + (size_t)(b * j->ms[0] + h * j->ms[1] + i * j->ms[2]) *
                                               (j->mask_bool ? 1 : sizeof(W))
                               : NULL;
    /* the logits, then their max (a NaN is the max, as in Nx.reduce_max);
     * plain loops the compiler vectorizes where there is no mask */
    if (!mrow) {
        PRAGMA(omp simd)
        for (int64_t c = 0; c < nvis; c++) row[c] = row[c] * s;
    } else if (j->mask_bool) {
        for (int64_t c = 0; c < nvis; c++) row[c] = mrow[c * j->ms[3]] ? row[c] * s : neg_inf;
    } else {
        const W *add = (const W *)mrow;
        for (int64_t c = 0; c < nvis; c++) row[c] = row[c] * s + add[c * j->ms[3]];
    }
    W m = neg_inf;
    int nan = 0;
    PRAGMA(omp simd reduction(max : m) reduction(| : nan))
    for (int64_t c = 0; c < nvis; c++) {
        m = row[c] > m ? row[c] : m;
        nan |= row[c] != row[c];
    }
    if (nan) m = (W)NAN;
    /* keys past nvis (causal) take no part: probability 0 for the product */
    for (int64_t c = nvis; c < nk; c++) row[c] = 0;
    /* every key masked: the row is 0 even with a sink (which takes all
     * the weight), and its v rows are not read (0 * inf) */
    bool keys = m != neg_inf;
    W sink = j->sinks ? ((const W *)j->sinks)[h] : neg_inf;
    if (j->sinks && (sink > m || sink != sink)) m = m != m ? m : sink;
    W mp = m == neg_inf ? (W)0 : m;
    /* E_ij = W(exp(W(L_ij - m'))), summed in double (f64: in f64); f32
     * through the engine's own vectorized exp where the CPU has one
     * (within an ULP of exp in double rounded once) */
    PRAGMA(omp simd)
    for (int64_t c = 0; c < nvis; c++) row[c] = row[c] - mp;
    EXP_ROW(j, row, nvis);
    double z = 0;
    PRAGMA(omp simd reduction(+ : z))
    for (int64_t c = 0; c < nvis; c++) z += (double)row[c];
    if (j->sinks) {
        W d = sink - mp;
        EXP_ROW(j, &d, 1);
        z += (double)d;
    }
    W zw = (W)z;
    if (!keys || zw == 0) {
        for (int64_t c = 0; c < nvis; c++) row[c] = 0;
        return false;
    }
    PRAGMA(omp simd)
    for (int64_t c = 0; c < nvis; c++) row[c] = row[c] / zw;
    if (j->t == EMILY_F16 || j->t == EMILY_BF16)
        for (int64_t c = 0; c < nvis; c++) row[c] = ROUND_P(j->t, row[c]);
    return true;
}

static void BLOCK_FN(sdpa_job *j, int64_t job) {
    const emily_sdpa_params *p = j->p;
    int64_t per_head = j->blocks, bh = job / per_head, blk = job % per_head;
    /* causal: the last blocks see the most keys; they go first */
    if (p->causal) blk = per_head - 1 - blk;
    int64_t b = bh / p->Hq, h = bh % p->Hq, hk = h / (p->Hq / p->Hkv);
    int64_t i0 = blk * j->rows, i1 = i0 + j->rows < p->Sq ? i0 + j->rows : p->Sq, n = i1 - i0;
    int64_t shift = p->Skv - p->Sq; /* row i sees keys j <= i + shift when causal */
    int64_t nk = p->Skv;
    if (p->causal) {
        nk = i1 - 1 + shift + 1;
        nk = nk < 0 ? 0 : nk > p->Skv ? p->Skv : nk;
    }
    size_t tsize = emily_dtype_size(j->t);
    char *out = j->out + (size_t)(((b * p->Hq + h) * p->Sq + i0) * p->Dv) * tsize;
    W *scores = NULL, *o = NULL;
    bool *live = NULL;
    if (nk > 0) {
        scores = malloc((size_t)(n * nk) * sizeof(W));
        o = malloc((size_t)(n * p->Dv) * sizeof(W));
        live = malloc((size_t)n * sizeof(bool));
        if (!scores || !o || !live) {
            atomic_store(&j->out_of_memory, true);
            free(scores), free(o), free(live);
            return;
        }
        const W *qb = (const W *)j->q + ((b * p->Hq + h) * p->Sq + i0) * p->D;
        const W *kb = (const W *)j->k + (b * p->Hkv + hk) * p->Skv * p->D;
        const W *vb = (const W *)j->v + (b * p->Hkv + hk) * p->Skv * p->Dv;
        int ld = (int)(p->D > 0 ? p->D : 1);
        if (p->D > 0)
            GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)nk, (int)p->D, (W)1, qb, ld, kb, ld, (W)0,
                 scores, (int)nk);
        else memset(scores, 0, (size_t)(n * nk) * sizeof(W));
        bool any = false;
        for (int64_t r = 0; r < n; r++) {
            int64_t i = i0 + r, nvis = nk;
            if (p->causal) {
                nvis = i + shift + 1;
                nvis = nvis < 0 ? 0 : nvis > nk ? nk : nvis;
            }
            live[r] = ROW_FN(j, scores + r * nk, nk, nvis, b, h, i);
            any = any || live[r];
        }
        if (any)
            GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)p->Dv, (int)nk, (W)1, scores, (int)nk, vb,
                 (int)p->Dv, (W)0, o, (int)p->Dv);
        for (int64_t r = 0; r < n; r++)
            if (!any || !live[r]) memset(o + r * p->Dv, 0, (size_t)p->Dv * sizeof(W));
    } else {
        o = calloc((size_t)(n * p->Dv), sizeof(W));
        if (!o) {
            atomic_store(&j->out_of_memory, true);
            return;
        }
    }
    for (int64_t r = 0; r < n; r++) STORE(j->t, o + r * p->Dv, out + (size_t)(r * p->Dv) * tsize, p->Dv);
    free(scores), free(o), free(live);
}

#undef BLOCK_FN
#undef ROW_FN
#undef PRAGMA
#undef SDPA_CAT
#undef SDPA_CAT2
#undef W
#undef SFX
#undef GEMM
#undef ROUND_P
#undef EXP_ROW
#undef STORE
