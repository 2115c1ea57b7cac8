/* emily_generate: text generation with SmolLM2-135M-Instruct (or another
 * llama GGUF) on Emily.
 *
 *   build/emily_generate "What is the capital of France?"
 *
 * prints the reply as it is generated; loading, prompt and per-token
 * times go to stderr. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "generate.h"
#include "llama_model.h"

#define MODEL_FILE "models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf"

typedef struct args {
    const char *device, *model, *system, *prompt, *ids, *weights;
    int max_new, context;
    bool raw, show_ids, quiet, ignore_eos;
    sampler_options sampling;
} args;

static void usage(FILE *f) {
    fprintf(f, "usage: emily_generate [options] PROMPT\n"
               "Text generation with a llama-architecture GGUF model (SmolLM2-135M-Instruct) on Emily.\n"
               "  --device D          cpu (default), cuda or cuda:N\n"
               "  --weights W         quantized (default): the matrices as the file stores them,\n"
               "                      multiplied by the fused quantized product; f32 or bf16:\n"
               "                      dequantized once at load and multiplied by dot (more\n"
               "                      memory: to compare against; examples/generate/README.md)\n"
               "  --model FILE        the GGUF file (default $EMILY_SMOLLM2_GGUF, else\n"
               "                      " MODEL_FILE "\n"
               "                      beside the build folder: scripts/setup puts it there)\n"
               "  --max-new-tokens N  stop after N new tokens (default 128), or at the end token\n"
               "  --temperature T     0 (default): greedy; > 0: sample from softmax(logits / T)\n"
               "  --top-k K           sample among the K most likely tokens (default 0: all)\n"
               "  --top-p P           ... and the fewest whose probability reaches P (default 1)\n"
               "  --seed S            the sampler's seed (default 0): same seed, same tokens\n"
               "  --system TEXT       the chat's system message (default: the model's)\n"
               "  --raw               the prompt as it is, no chat template\n"
               "  --prompt-ids LIST   the prompt as token ids (comma-separated) instead of text\n"
               "  --context N         positions in the key/value cache (default: prompt + new)\n"
               "  --ignore-eos        do not stop at the end token (exactly N new tokens)\n"
               "  --ids               print the generated token ids on stderr at the end\n"
               "  --quiet             no progress or timing on stderr\n");
}

/* 0 on success, 1 on a usage error (message printed), 2 for --help */
static int parse_args(int argc, char **argv, args *a) {
    memset(a, 0, sizeof *a);
    a->device = "cpu";
    a->weights = "quantized";
    a->max_new = 128;
    a->sampling.top_p = 1.0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        bool ok = true, takes = true;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) return 2;
        else if (!strcmp(o, "--raw")) a->raw = true, takes = false;
        else if (!strcmp(o, "--ids")) a->show_ids = true, takes = false;
        else if (!strcmp(o, "--quiet")) a->quiet = true, takes = false;
        else if (!strcmp(o, "--ignore-eos")) a->ignore_eos = true, takes = false;
        else if (o[0] != '-' || !strcmp(o, "-")) {
            if (a->prompt) {
                fprintf(stderr, "emily_generate: one prompt only (quote it): \"%s\"\n", o);
                return 1;
            }
            a->prompt = o;
            takes = false;
        } else if (!v) {
            fprintf(stderr, "emily_generate: %s needs a value\n", o);
            return 1;
        } else if (!strcmp(o, "--device")) a->device = v;
        else if (!strcmp(o, "--model")) a->model = v;
        else if (!strcmp(o, "--weights")) {
            llama_weights w;
            if (llama_weights_parse(v, &w)) {
                fprintf(stderr, "emily_generate: bad value for --weights: \"%s\" (quantized, f32 or bf16)\n", v);
                return 1;
            }
            a->weights = v;
        } else if (!strcmp(o, "--system")) a->system = v;
        else if (!strcmp(o, "--prompt-ids")) a->ids = v;
        else if (!strcmp(o, "--max-new-tokens")) ok = cli_parse_long(v, 1, 1 << 20, &n), a->max_new = (int)n;
        else if (!strcmp(o, "--context")) ok = cli_parse_long(v, 1, 1 << 24, &n), a->context = (int)n;
        else if (!strcmp(o, "--top-k")) ok = cli_parse_long(v, 0, INT_MAX, &n), a->sampling.top_k = (int)n;
        else if (!strcmp(o, "--seed")) ok = cli_parse_long(v, 0, LONG_MAX, &n), a->sampling.seed = (uint64_t)n;
        else if (!strcmp(o, "--temperature")) ok = cli_parse_double(v, &a->sampling.temperature);
        else if (!strcmp(o, "--top-p")) ok = cli_parse_double(v, &a->sampling.top_p);
        else {
            fprintf(stderr, "emily_generate: unknown option %s (--help lists them)\n", o);
            return 1;
        }
        if (!ok) {
            fprintf(stderr, "emily_generate: bad value for %s: \"%s\"\n", o, v);
            return 1;
        }
        if (takes) i++;
    }
    if (!a->prompt == !a->ids) {
        fprintf(stderr, "emily_generate: give a PROMPT or --prompt-ids (one of them)\n");
        return 1;
    }
    return 0;
}

/* The model file: --model, $EMILY_SMOLLM2_GGUF, else MODEL_FILE in the
 * folder above the program's (build/emily_generate -> the checkout). */
static char *model_path(const args *a) {
    if (a->model) return strdup(a->model);
    const char *env = getenv("EMILY_SMOLLM2_GGUF");
    if (env && *env) return strdup(env);
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return strdup(MODEL_FILE);
    exe[n] = 0;
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
    }
    size_t len = strlen(exe) + 1 + sizeof MODEL_FILE;
    char *p = malloc(len);
    if (p) snprintf(p, len, "%s/%s", exe, MODEL_FILE);
    return p;
}

static int parse_id_list(const char *text, int32_t **ids, int *n) {
    *n = 0;
    *ids = NULL;
    int cap = 0;
    const char *p = text;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v < 0 || v > INT32_MAX || (*end && *end != ',')) return -1;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            int32_t *grown = realloc(*ids, sizeof **ids * (size_t)cap);
            if (!grown) return -1;
            *ids = grown;
        }
        (*ids)[(*n)++] = (int32_t)v;
        p = *end ? end + 1 : end;
    }
    return *n > 0 ? 0 : -1;
}

static void print_piece(void *ctx, const char *text, size_t len) {
    (void)ctx;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
}

int main(int argc, char **argv) {
    args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) {
        usage(rc == 2 ? stdout : stderr);
        return rc == 2 ? 0 : 2;
    }
    emily_device device;
    if (emily_device_parse(a.device, &device)) {
        fprintf(stderr, "emily_generate: %s\n", emily_last_error());
        return 2;
    }
    char *path = model_path(&a);
    if (!path) return 1;
    generator *gen = NULL;
    char err[512];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!a.quiet) fprintf(stderr, "loading %s on %s (%s weights) ...\n", path, a.device, a.weights);
    if (generator_open_weights(path, device, a.weights, &gen, err, sizeof err)) {
        fprintf(stderr, "emily_generate: %s\n", err);
        if (access(path, F_OK) != 0)
            fprintf(stderr,
                    "emily_generate: %s does not exist: run scripts/install_smollm2 "
                    "(scripts/setup does), or pass --model FILE\n",
                    path);
        free(path);
        return 1;
    }
    free(path);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (!a.quiet)
        fprintf(stderr, "loaded in %.0f ms\n", (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
    int32_t *prompt = NULL;
    int n_prompt = 0;
    if (a.ids) {
        if (parse_id_list(a.ids, &prompt, &n_prompt)) {
            fprintf(stderr, "emily_generate: --prompt-ids: expected comma-separated token ids\n");
            generator_close(gen);
            free(prompt);
            return 2;
        }
    } else if (generator_prompt(gen, a.prompt, a.system, !a.raw, &prompt, &n_prompt, err, sizeof err)) {
        fprintf(stderr, "emily_generate: %s\n", err);
        generator_close(gen);
        return 1;
    }
    generate_options go = {.max_new = a.max_new,
                           .context = a.context,
                           .sampling = a.sampling,
                           .on_text = print_piece,
                           .verbose = !a.quiet,
                           .ignore_eos = a.ignore_eos};
    generate_result res;
    rc = generator_run(gen, prompt, n_prompt, &go, &res, err, sizeof err);
    putchar('\n');
    fflush(stdout);
    if (rc) fprintf(stderr, "emily_generate: %s\n", err);
    else {
        if (a.show_ids) {
            fprintf(stderr, "ids:");
            for (int i = 0; i < res.n; i++) fprintf(stderr, "%s%d", i ? "," : " ", res.ids[i]);
            fprintf(stderr, "\n");
        }
        if (!a.quiet)
            fprintf(stderr,
                    "prompt: %d tokens in %.1f ms (%.1f tokens/s); generated: %d tokens in %.1f ms "
                    "(%.1f tokens/s, %.2f ms/token)\n",
                    n_prompt, res.prefill_ms, n_prompt / (res.prefill_ms / 1e3), res.n, res.decode_ms,
                    res.n > 1 ? (res.n - 1) / (res.decode_ms / 1e3) : 0.0,
                    res.n > 1 ? res.decode_ms / (res.n - 1) : 0.0);
    }
    generate_result_free(&res);
    free(prompt);
    generator_close(gen);
    return rc ? 1 : 0;
}
