/* examples/generate (build/emily_generate): the sampler, and the llama
 * forward pass with its key/value cache on SmolLM2-135M-Instruct.
 *
 * Always run: the sampler's units (greedy ties and NaNs, seeded sampling
 * and its distribution, top-k / top-p cuts, bad options).
 * With the model installed (scripts/setup; EMILY_SMOLLM2_GGUF, else
 * models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf): each
 * prompt's text through the tokenizer and chat template gives the
 * reference's prompt ids; greedy
 * ids identical to PyTorch's on every prompt of
 * tests/models/smollm2_reference.json (made by
 * tests/models/smollm2_reference.py: transformers runs the same GGUF
 * weights, dequantized to f32) and the first step's ten largest logits
 * within LOGIT_TOL of its; the prompt fed one token at a time through the
 * cache gives the logits of the whole prompt at once; bad calls fail
 * clearly. The reference checks also run with the matrices dequantized
 * at load (--weights f32: the same bounds; --weights bf16: a bf16 bound,
 * agreement of the greedy ids printed). Without the model those cases
 * print SKIPPED and do not count. Always: the weights modes' names and
 * the generator's refusal of an unknown one.
 * With a CUDA device: the model on the GPU against the CPU engine. */
#include <jansson.h>
#include <math.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include "generate.h"
#include "harness.h"
#include "llama_model.h"
#include "sampler.h"

/* Logits of the first generated position against PyTorch's: both compute
 * in f32 from identical weights, in different orders of the sums (BLAS
 * blocks, the quantized kernel's groups, 30 layers deep). Measured on the
 * CPU: at most 3.4e-5 on logits near 25, about 1.4e-6 relative (the case
 * prints it; with the weights dequantized to f32 also 1.4e-6); the bound, 1e-5 relative to the largest logit, is the f32
 * reordering error of the deepest sums (K = 1536 terms, u = 6e-8) kept
 * well under the smallest gap between the two best logits the reference
 * records (0.0118), so a pass means greedy decoding cannot flip. */
#define LOGIT_REL_TOL 1e-5

/* bf16 weights (--weights bf16): every weight and every product's input
 * is rounded to bf16 the engine's way (Nx's: the top 16 bits of the f32
 * value, a relative error below 2^-7, twice round-to-nearest's 2^-8),
 * the products summed in f32. Those roundings move the first step's ten
 * best logits by at most 1.74e-2 of the largest logit (prompt 0; the
 * others 4.2e-3 to 1.13e-2), 2.2 units of 2^-7, measured on the CPU:
 * the 30 layers' errors partly cancel through the rms norms. The bound
 * is 4 units, 2^-5, room for other summation orders (cuBLAS's tensor
 * cores) that a wrong matrix, a lost rounding step or an unrounded
 * weight would still exceed by far. For comparison, transformers' own
 * bf16 model (round to nearest, bf16 between the layers too) is 2.96e-2
 * from the same reference at worst on these prompts, and round to nearest
 * in this lane's places 4.5e-3 (both measured with PyTorch). */
#define BF16_LOGIT_REL_TOL 0x1p-5

static const emily_device CUDA0 = {EMILY_DEVICE_CUDA, 0};

/* Under AddressSanitizer (make SAN=1) the model runs about 30x slower: the
 * reference cases shrink to the first REF_PROMPTS prompts and REF_TOKENS
 * new tokens of each (a prefix of the same greedy sequence), which still
 * runs every code path (prefill, cached steps, the end token in the
 * first prompt's 8); the normal build compares everything. */
#if defined(__SANITIZE_ADDRESS__)
#define REF_PROMPTS 1
#define REF_TOKENS 8
#else
#define REF_PROMPTS 1000
#define REF_TOKENS 1000
#endif
static const char *model_path, *reference_path;

/* ---- sampler ------------------------------------------------------------- */

TEST(sampler_greedy_ties_and_nans) {
    sampler s;
    char err[256];
    sampler_options greedy = {.temperature = 0, .top_p = 1};
    CHECK(sampler_init(&s, &greedy, 5, err, sizeof err) == 0);
    float a[5] = {1, 3, 3, -INFINITY, 2};
    CHECK(sampler_next(&s, a) == 1); /* the lower id of a tie, as torch.argmax */
    float b[5] = {NAN, 0, NAN, 5, 4};
    CHECK(sampler_next(&s, b) == 3); /* NaN is never the largest */
    float c[5] = {NAN, NAN, NAN, NAN, NAN};
    CHECK(sampler_next(&s, c) == 0);
    sampler_free(&s);
}

TEST(sampler_seeded_distribution) {
    /* logits log 3 and 0: p = 3/4 and 1/4; over N draws the count of the
     * first is N * 3/4 within 5 standard deviations (sqrt(N * 3/16)) */
    char err[256];
    sampler_options o = {.temperature = 1, .top_p = 1, .seed = 42};
    sampler s, t;
    CHECK(sampler_init(&s, &o, 2, err, sizeof err) == 0);
    CHECK(sampler_init(&t, &o, 2, err, sizeof err) == 0);
    float l[2] = {(float)log(3.0), 0};
    const int n = 20000;
    int first = 0, same = 0;
    for (int i = 0; i < n; i++) {
        int32_t x = sampler_next(&s, l), y = sampler_next(&t, l);
        first += x == 0;
        same += x == y;
    }
    CHECK(same == n); /* one seed, one sequence */
    double sd = sqrt(n * 3.0 / 16.0);
    CHECK(fabs(first - n * 0.75) < 5 * sd);
    sampler_free(&s);
    sampler_free(&t);
    /* temperature 0.25 sharpens to p = 81/82 */
    o.temperature = 0.25;
    CHECK(sampler_init(&s, &o, 2, err, sizeof err) == 0);
    first = 0;
    for (int i = 0; i < n; i++) first += sampler_next(&s, l) == 0;
    double p = 81.0 / 82.0;
    CHECK(fabs(first - n * p) < 5 * sqrt(n * p * (1 - p)));
    sampler_free(&s);
}

TEST(sampler_top_k_and_top_p) {
    char err[256];
    float l[4] = {0, 2, 1, 1.5f};
    sampler s;
    /* top-k 1 and a tiny top-p are greedy whatever the seed */
    sampler_options k1 = {.temperature = 1, .top_k = 1, .top_p = 1, .seed = 7};
    sampler_options p0 = {.temperature = 1, .top_p = 1e-9, .seed = 7};
    for (int v = 0; v < 2; v++) {
        CHECK(sampler_init(&s, v ? &p0 : &k1, 4, err, sizeof err) == 0);
        for (int i = 0; i < 200; i++) CHECK(sampler_next(&s, l) == 1);
        sampler_free(&s);
    }
    /* top-k 2 draws only ids 1 and 3; -inf and NaN never */
    float m[5] = {0, 2, -INFINITY, 1.5f, NAN};
    sampler_options k2 = {.temperature = 2, .top_k = 2, .top_p = 1, .seed = 9};
    CHECK(sampler_init(&s, &k2, 5, err, sizeof err) == 0);
    int seen[5] = {0};
    for (int i = 0; i < 2000; i++) seen[sampler_next(&s, m)]++;
    CHECK(seen[0] == 0 && seen[2] == 0 && seen[4] == 0 && seen[1] > 0 && seen[3] > 0);
    sampler_free(&s);
}

TEST(sampler_bad_options) {
    char err[256];
    sampler s;
    sampler_options bad[] = {{.temperature = -1, .top_p = 1},
                             {.temperature = NAN, .top_p = 1},
                             {.temperature = 1, .top_k = -1, .top_p = 1},
                             {.temperature = 1, .top_p = 0},
                             {.temperature = 1, .top_p = 1.5}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = 0;
        CHECK(sampler_init(&s, &bad[i], 4, err, sizeof err) == -1);
        CHECK(strstr(err, "top-p") != NULL);
    }
    sampler_options ok = {.temperature = 1, .top_p = 1};
    CHECK(sampler_init(&s, &ok, 0, err, sizeof err) == -1);
}

/* ---- weights modes (no model needed) ---------------------------------------- */

TEST(weights_mode_names) {
    const char *names[3] = {"quantized", "f32", "bf16"};
    for (int i = 0; i < 3; i++) {
        llama_weights w = (llama_weights)-1;
        CHECK_OK(llama_weights_parse(names[i], &w));
        CHECK((int)w == i && llama_weights_name(w) && !strcmp(llama_weights_name(w), names[i]));
    }
    llama_weights w = LLAMA_WEIGHTS_F32;
    CHECK_ERR(llama_weights_parse("q8", &w), EMILY_ERR_ARGUMENT, "\"q8\" (quantized, f32 or bf16)");
    CHECK_ERR(llama_weights_parse("F32", &w), EMILY_ERR_ARGUMENT, "unknown weights mode \"F32\"");
    CHECK_ERR(llama_weights_parse("", &w), EMILY_ERR_ARGUMENT, "unknown weights mode");
    CHECK_ERR(llama_weights_parse(NULL, &w), EMILY_ERR_ARGUMENT, "(NULL)");
    CHECK(w == LLAMA_WEIGHTS_F32); /* untouched on failure */
    CHECK(llama_weights_name((llama_weights)3) == NULL && llama_weights_name((llama_weights)-1) == NULL);
    /* the generator refuses the name before it reads the file */
    generator *g = (generator *)&w;
    char err[256] = "";
    CHECK(generator_open_weights("/nonexistent/model.gguf", EMILY_CPU, "q8", &g, err, sizeof err) == -1);
    CHECK(g == NULL && strstr(err, "\"q8\"") && strstr(err, "quantized, f32 or bf16"));
}

/* ---- the model ------------------------------------------------------------- */

typedef struct ref_case {
    char *text;
    bool chat;
    int32_t *prompt, *greedy;
    int n_prompt, n_greedy;
    int32_t top_ids[10];
    double top_logits[10], min_gap;
} ref_case;

static int load_reference(ref_case **out) {
    json_error_t jerr;
    json_t *root = json_load_file(reference_path, 0, &jerr);
    if (!root) {
        fprintf(stderr, "  FAIL: %s: %s\n", reference_path, jerr.text);
        harness_failures++;
        return 0;
    }
    const json_t *cases = json_object_get(root, "cases");
    int n = (int)json_array_size(cases);
    ref_case *r = calloc((size_t)n, sizeof *r);
    for (int i = 0; r && i < n; i++) {
        const json_t *c = json_array_get(cases, (size_t)i);
        const json_t *p = json_object_get(c, "prompt_ids"), *g = json_object_get(c, "greedy_ids");
        r[i].text = strdup(json_string_value(json_object_get(c, "text")));
        r[i].chat = json_is_true(json_object_get(c, "chat"));
        r[i].n_prompt = (int)json_array_size(p);
        r[i].n_greedy = (int)json_array_size(g);
        r[i].prompt = malloc(sizeof(int32_t) * (size_t)r[i].n_prompt);
        r[i].greedy = malloc(sizeof(int32_t) * (size_t)r[i].n_greedy);
        for (int j = 0; j < r[i].n_prompt; j++)
            r[i].prompt[j] = (int32_t)json_integer_value(json_array_get(p, (size_t)j));
        for (int j = 0; j < r[i].n_greedy; j++)
            r[i].greedy[j] = (int32_t)json_integer_value(json_array_get(g, (size_t)j));
        for (int j = 0; j < 10; j++) {
            r[i].top_ids[j] = (int32_t)json_integer_value(
                json_array_get(json_object_get(c, "first_top_ids"), (size_t)j));
            r[i].top_logits[j] = json_number_value(json_array_get(json_object_get(c, "first_top_logits"), (size_t)j));
        }
        r[i].min_gap = json_number_value(json_object_get(c, "min_top2_gap"));
    }
    json_decref(root);
    *out = r;
    return r ? n : 0;
}

static void free_reference(ref_case *r, int n) {
    for (int i = 0; r && i < n; i++) free(r[i].text), free(r[i].prompt), free(r[i].greedy);
    free(r);
}

static float *host_logits(const emily_tensor *t, int vocab) {
    float *h = malloc(sizeof *h * (size_t)vocab);
    if (h && emily_to_binary(t, h, sizeof *h * (size_t)vocab)) {
        fprintf(stderr, "  FAIL: reading logits: %s\n", emily_last_error());
        harness_failures++;
        free(h);
        return NULL;
    }
    return h;
}

/* How a weights mode (llama_model.h) is held to the reference. */
typedef struct lane {
    const char *weights; /* generator_open_weights's name */
    double logit_tol;    /* first-step top-10 logits, relative to the largest */
    bool all_ids;        /* every greedy id equal; else agreement reported */
    int max_tokens;      /* greedy ids compared per prompt (with REF_TOKENS) */
} lane;

/* quantized and f32 compute in f32 from the reference's weight values:
 * the same bound, every id. */
static const lane QUANTIZED = {"quantized", LOGIT_REL_TOL, true, REF_TOKENS};
static const lane F32 = {"f32", LOGIT_REL_TOL, true, REF_TOKENS};
/* bf16: BF16_LOGIT_REL_TOL (see its comment); greedy ids agree with
 * PyTorch's f32 ones only as long as no step's two best logits are
 * closer than the rounding moves them, so the ids are counted, not
 * required, except the first: it must be the reference's wherever the
 * reference's first-step gap between its two best exceeds twice the
 * bound (the two logits cannot then swap). */
/* The first 8 ids of each prompt: past them the counts say nothing more
 * (prompt 3 leaves the reference at its 5th), and the prompt's rows (a
 * prefill of more than 4) still convert each bf16 matrix to f32 on the
 * CPU. */
static const lane BF16 = {"bf16", BF16_LOGIT_REL_TOL, false, 8};

/* Greedy ids and first logits of every reference prompt on `device`. */
static void check_reference_on(emily_device device, const lane *ln) {
    ref_case *ref = NULL;
    int n = load_reference(&ref);
    CHECK(n >= 5);
    int all = n;
    if (n > REF_PROMPTS) n = REF_PROMPTS;
    int tokens = ln->max_tokens < REF_TOKENS ? ln->max_tokens : REF_TOKENS;
    for (int i = 0; i < n; i++)
        if (ref[i].n_greedy > tokens) ref[i].n_greedy = tokens;
    generator *g = NULL;
    char err[512];
    if (generator_open_weights(model_path, device, ln->weights, &g, err, sizeof err)) {
        fprintf(stderr, "  FAIL: %s\n", err);
        harness_failures++;
        free_reference(ref, all);
        return;
    }
    double worst = 0;
    int agree_total = 0, ids_total = 0, first_required = 0;
    for (int i = 0; i < n; i++) {
        /* the text through the tokenizer (and the chat template) gives the prompt's ids */
        int32_t *ids = NULL;
        int n_ids = 0;
        CHECK(generator_prompt(g, ref[i].text, NULL, ref[i].chat, &ids, &n_ids, err, sizeof err) == 0);
        CHECK(n_ids == ref[i].n_prompt && memcmp(ids, ref[i].prompt, sizeof(int32_t) * (size_t)n_ids) == 0);
        free(ids);
        generate_options o = {.max_new = ref[i].n_greedy, .sampling = {.top_p = 1}};
        generate_result res;
        CHECK(generator_run(g, ref[i].prompt, ref[i].n_prompt, &o, &res, err, sizeof err) == 0);
        int agree = 0; /* the leading ids equal to the reference's */
        while (agree < res.n && agree < ref[i].n_greedy && res.ids[agree] == ref[i].greedy[agree]) agree++;
        agree_total += agree;
        ids_total += ref[i].n_greedy;
        bool same = res.n == ref[i].n_greedy && agree == res.n;
        if (ln->all_ids && !same) {
            fprintf(stderr, "  FAIL: prompt %d: %d ids, want %d; first difference at %d\n", i, res.n, ref[i].n_greedy,
                    agree);
            harness_failures++;
        }
        if (!ln->all_ids) {
            double gap = ref[i].top_logits[0] - ref[i].top_logits[1];
            bool required = gap > 2 * ln->logit_tol * fabs(ref[i].top_logits[0]);
            first_required += required;
            if (required && agree == 0) {
                fprintf(stderr, "  FAIL: prompt %d: first id %d, want %d (reference gap %.3g)\n", i,
                        res.n ? res.ids[0] : -1, ref[i].greedy[0], gap);
                harness_failures++;
            }
            printf("  %s prompt %d: the first %d of %d greedy ids agree (first-step gap %.3g%s)\n", ln->weights, i,
                   agree, ref[i].n_greedy, gap, required ? ", first id required" : "");
        }
        generate_result_free(&res);
        /* the first step's logits */
        llama_cache cache;
        emily_tensor *logits = NULL;
        CHECK_OK(llama_cache_new(generator_model(g), ref[i].n_prompt, &cache));
        CHECK_OK(llama_forward(generator_model(g), &cache, ref[i].prompt, ref[i].n_prompt, &logits));
        float *h = logits ? host_logits(logits, generator_model(g)->cfg.vocab) : NULL;
        for (int j = 0; h && j < 10; j++) {
            double d = fabs(h[ref[i].top_ids[j]] - ref[i].top_logits[j]);
            worst = fmax(worst, d / fabs(ref[i].top_logits[0]));
            CHECK(d <= ln->logit_tol * fabs(ref[i].top_logits[0]));
        }
        free(h);
        emily_tensor_release(logits);
        llama_cache_free(&cache);
    }
    printf("  %s weights: %d of %d prompts (at most %d tokens each): %d of %d greedy ids agree "
           "(leading runs)%s; largest first-step top-10 logit difference %.2e relative "
           "(bound %.1e)\n",
           ln->weights, n, all, tokens, agree_total, ids_total, ln->all_ids ? ", all required" : "", worst,
           ln->logit_tol);
    if (!ln->all_ids) printf("  %s weights: first id required on %d of %d prompts\n", ln->weights, first_required, n);
    generator_close(g);
    free_reference(ref, all);
}

TEST(smollm2_matches_pytorch) { check_reference_on(EMILY_CPU, &QUANTIZED); }
TEST(smollm2_f32_weights_match_pytorch) { check_reference_on(EMILY_CPU, &F32); }
TEST(smollm2_bf16_weights_agreement) { check_reference_on(EMILY_CPU, &BF16); }

/* The prompt one token at a time through the cache gives the logits of
 * the whole prompt at once (the same arithmetic, other matrix shapes:
 * within the same relative bound). */
TEST(smollm2_cache_steps_match_prefill) {
    generator *g = NULL;
    char err[512];
    if (generator_open(model_path, EMILY_CPU, &g, err, sizeof err)) {
        fprintf(stderr, "  FAIL: %s\n", err);
        harness_failures++;
        return;
    }
    const llama_model *m = generator_model(g);
    const int32_t prompt[6] = {1, 4093, 198, 504, 3575, 282};
    llama_cache whole, steps;
    emily_tensor *a = NULL, *b = NULL;
    CHECK_OK(llama_cache_new(m, 8, &whole));
    CHECK_OK(llama_cache_new(m, 8, &steps));
    CHECK_OK(llama_forward(m, &whole, prompt, 6, &a));
    for (int i = 0; i < 6; i++) {
        emily_tensor_release(b);
        b = NULL;
        CHECK_OK(llama_forward(m, &steps, prompt + i, 1, &b));
    }
    CHECK(whole.length == 6 && steps.length == 6);
    float *x = a ? host_logits(a, m->cfg.vocab) : NULL, *y = b ? host_logits(b, m->cfg.vocab) : NULL;
    double worst = 0, top = 0;
    for (int i = 0; x && y && i < m->cfg.vocab; i++) {
        worst = fmax(worst, fabs(x[i] - y[i]));
        top = fmax(top, fabs(x[i]));
    }
    CHECK(x && y && worst <= LOGIT_REL_TOL * top);
    printf("  cache steps vs prefill: largest logit difference %.2e (largest logit %.1f)\n", worst, top);
    free(x);
    free(y);
    RELEASE(a, b);
    llama_cache_free(&whole);
    llama_cache_free(&steps);
    generator_close(g);
}

TEST(smollm2_bad_calls) {
    generator *g = NULL;
    char err[512];
    CHECK(generator_open("/nonexistent/model.gguf", EMILY_CPU, &g, err, sizeof err) == -1);
    CHECK(g == NULL && strstr(err, "nonexistent") != NULL);
    CHECK(generator_open_weights("/nonexistent/model.gguf", EMILY_CPU, "f32", &g, err, sizeof err) == -1);
    CHECK(g == NULL && strstr(err, "nonexistent") != NULL);
    emily_gguf *file = NULL;
    llama_model unloaded;
    CHECK_OK(emily_gguf_open(model_path, &file));
    CHECK_ERR(llama_model_load(file, EMILY_CPU, (llama_weights)7, &unloaded), EMILY_ERR_ARGUMENT,
              "7 is not a weights mode");
    CHECK(unloaded.layer == NULL);
    emily_gguf_close(file);
    if (generator_open(model_path, EMILY_CPU, &g, err, sizeof err)) {
        fprintf(stderr, "  FAIL: %s\n", err);
        harness_failures++;
        return;
    }
    const llama_model *m = generator_model(g);
    llama_cache c;
    emily_tensor *out = NULL;
    CHECK_ERR(llama_cache_new(m, 0, &c), EMILY_ERR_ARGUMENT, "positions");
    CHECK_ERR(llama_cache_new(m, m->cfg.context + 1, &c), EMILY_ERR_ARGUMENT, "positions");
    CHECK_OK(llama_cache_new(m, 2, &c));
    const int32_t three[3] = {1, 2, 3}, bad[1] = {49152}, neg[1] = {-1};
    CHECK_ERR(llama_forward(m, &c, three, 3, &out), EMILY_ERR_SHAPE, "do not fit");
    CHECK_ERR(llama_forward(m, &c, bad, 1, &out), EMILY_ERR_ARGUMENT, "not in 0..49151");
    CHECK_ERR(llama_forward(m, &c, neg, 1, &out), EMILY_ERR_ARGUMENT, "not in 0..49151");
    CHECK_ERR(llama_forward(m, &c, NULL, 1, &out), EMILY_ERR_ARGUMENT, "NULL");
    CHECK_ERR(llama_forward(m, &c, three, 0, &out), EMILY_ERR_SHAPE, "do not fit");
    CHECK(c.length == 0 && out == NULL);
    llama_cache_free(&c);
    generate_options o = {.max_new = 4, .context = 3, .sampling = {.top_p = 1}};
    generate_result res;
    CHECK(generator_run(g, three, 3, &o, &res, err, sizeof err) == -1);
    CHECK(strstr(err, "no room") != NULL);
    o.sampling.top_p = 2;
    o.context = 0;
    CHECK(generator_run(g, three, 3, &o, &res, err, sizeof err) == -1);
    CHECK(strstr(err, "top-p") != NULL);
    generator_close(g);
}

/* ---- GPU ---------------------------------------------------------------------- */

TEST(gpu_smollm2_matches_pytorch) { check_reference_on(CUDA0, &QUANTIZED); }
TEST(gpu_smollm2_f32_weights_match_pytorch) { check_reference_on(CUDA0, &F32); }
TEST(gpu_smollm2_bf16_weights_agreement) { check_reference_on(CUDA0, &BF16); }

int main(int argc, char **argv) {
    if (!harness_args(argc, argv)) return 2;
    static const harness_case always[] = {CASE(sampler_greedy_ties_and_nans), CASE(sampler_seeded_distribution),
                                          CASE(sampler_top_k_and_top_p),      CASE(sampler_bad_options),
                                          CASE(weights_mode_names),           {NULL, NULL}};
    static const harness_case with_model[] = {CASE(smollm2_matches_pytorch),
                                              CASE(smollm2_f32_weights_match_pytorch),
                                              CASE(smollm2_bf16_weights_agreement),
                                              CASE(smollm2_cache_steps_match_prefill),
                                              CASE(smollm2_bad_calls),
                                              {NULL, NULL}};
    static const harness_case on_gpu_with_model[] = {CASE(gpu_smollm2_matches_pytorch),
                                                     CASE(gpu_smollm2_f32_weights_match_pytorch),
                                                     CASE(gpu_smollm2_bf16_weights_agreement),
                                                     {NULL, NULL}};
    const char *env = getenv("EMILY_SMOLLM2_GGUF");
    model_path = env && *env ? env : "models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf";
    env = getenv("EMILY_SMOLLM2_REFERENCE");
    reference_path = env && *env ? env : "tests/models/smollm2_reference.json";
    bool have_model = access(model_path, R_OK) == 0 && access(reference_path, R_OK) == 0;
    bool have_gpu = emily_device_count(EMILY_DEVICE_CUDA) > 0;
    char why_model[1200];
    snprintf(why_model, sizeof why_model,
             "%s not found (scripts/setup installs the model; EMILY_SMOLLM2_GGUF names it)",
             access(reference_path, R_OK) != 0 ? reference_path : model_path);
    int rc = harness_run("generate", always);
    bool skipped = false;
    if (have_model) rc = harness_run("generate (SmolLM2-135M-Instruct)", with_model) || rc;
    else printf("generate: SKIPPED %d model cases: %s\n", harness_count_cases(with_model), why_model), skipped = true;
    if (have_gpu && have_model) rc = harness_run("generate (GPU, SmolLM2)", on_gpu_with_model) || rc;
    else
        printf("generate: SKIPPED %d GPU model cases: %s\n", harness_count_cases(on_gpu_with_model),
               have_gpu ? why_model
                        : "no CUDA device usable here (no GPU, no driver, or a build without the CUDA engine)"),
            skipped = true;
    /* not harness_finish when something was skipped: --only may name a skipped case */
    return skipped ? rc : harness_finish(rc);
}
