/* emily_embed: sentence embeddings with all-MiniLM-L6-v2 on Emily.
 *
 *   build/emily_embed "A man is eating food." "A man is eating a piece of bread."
 *
 * prints each sentence's embedding (its first values) and the cosine
 * similarity of every pair; progress and timing go to stderr. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "sentence_embed.h"

#define MODEL_SUBDIR "models/all-MiniLM-L6-v2"

typedef struct args {
    const char *device, *model, *file, *out;
    int max_length, batch_size, batch_tokens, runs, values;
    bool ids, quiet;
    bool show_batches; /* progress lines (the first run only) */
    int n;
    char **texts; /* the sentences: command line, then --file's lines */
} args;

static void usage(FILE *f) {
    fprintf(f, "usage: emily_embed [options] SENTENCE...\n"
               "Sentence embeddings with all-MiniLM-L6-v2 (mean pooling, unit length) on Emily.\n"
               "  --device D       cpu (default), cuda or cuda:N\n"
               "  --model DIR      the model folder (default $EMILY_MINILM_DIR, else\n"
               "                   " MODEL_SUBDIR " beside the build folder: scripts/setup puts it there)\n"
               "  --file PATH      also embed each line of PATH (after the SENTENCEs)\n"
               "  --max-length N   tokens per sentence with [CLS] and [SEP] (default 256)\n"
               "  --batch-size N   sentences per batch, padded to its longest (default 32)\n"
               "  --batch-tokens N at most N positions per forward pass; larger batches run in\n"
               "                   parts (default 512 on the cpu, where it keeps the work in\n"
               "                   cache; 0, no limit, on cuda)\n"
               "  --runs N         embed everything N times after a warm-up; report the median\n"
               "                   and best times\n"
               "  --values N       values of each embedding to print (default 6)\n"
               "  --out PATH       also write the embeddings to PATH: f32, little-endian,\n"
               "                   one row of the model's hidden size per sentence\n"
               "  --ids            print each sentence's token ids\n"
               "  --quiet          no progress or timing on stderr\n");
}

static bool add_text(args *a, char *text) {
    char **t = realloc(a->texts, (size_t)(a->n + 1) * sizeof *t);
    if (!t) return false;
    a->texts = t;
    a->texts[a->n++] = text;
    return true;
}

/* Each line of the file is a sentence (its newline dropped). The lines
 * are owned by a->texts from here. */
static bool read_lines(args *a, const char *path, char ***owned, int *nowned) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "emily_embed: cannot open %s: %s\n", path, strerror(errno));
        return false;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    bool ok = true;
    while (ok && (len = getline(&line, &cap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
        char *copy = strdup(line);
        char **o = copy ? realloc(*owned, (size_t)(*nowned + 1) * sizeof *o) : NULL;
        if (o) {
            *owned = o;
            (*owned)[(*nowned)++] = copy;
        }
        ok = o && add_text(a, copy);
        if (!o) free(copy);
    }
    free(line);
    fclose(f);
    if (!ok) fprintf(stderr, "emily_embed: out of memory reading %s\n", path);
    return ok;
}

/* 0 on success, 2 on a usage error. */
static int parse_args(int argc, char **argv, args *a) {
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = true, ok = true;
        if (strcmp(o, "--device") == 0 && v) a->device = v;
        else if (strcmp(o, "--model") == 0 && v) a->model = v;
        else if (strcmp(o, "--file") == 0 && v) a->file = v;
        else if (strcmp(o, "--out") == 0 && v) a->out = v;
        else if (strcmp(o, "--max-length") == 0 && v) ok = cli_parse_int(v, 2, 1 << 20, &a->max_length);
        else if (strcmp(o, "--batch-size") == 0 && v) ok = cli_parse_int(v, 1, 1 << 20, &a->batch_size);
        else if (strcmp(o, "--batch-tokens") == 0 && v) ok = cli_parse_int(v, 0, 1 << 30, &a->batch_tokens);
        else if (strcmp(o, "--runs") == 0 && v) ok = cli_parse_int(v, 1, 1 << 20, &a->runs);
        else if (strcmp(o, "--values") == 0 && v) ok = cli_parse_int(v, 0, 1 << 20, &a->values);
        else {
            takes = false;
            if (strcmp(o, "--ids") == 0) a->ids = true;
            else if (strcmp(o, "--quiet") == 0) a->quiet = true;
            else if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
                usage(stdout);
                exit(0);
            } else if (strcmp(o, "--") == 0) {
                for (i++; i < argc; i++) ok = ok && add_text(a, argv[i]);
            } else if (o[0] == '-' && o[1] == '-') {
                fprintf(stderr, "emily_embed: unknown option or missing value: %s\n", o);
                return 2;
            } else {
                ok = add_text(a, argv[i]);
            }
        }
        if (!ok) {
            fprintf(stderr, "emily_embed: bad value for %s: %s\n", o, v ? v : "");
            return 2;
        }
        if (takes) i++;
    }
    return 0;
}

/* The default model folder: $EMILY_MINILM_DIR, else MODEL_SUBDIR in the
 * folder above the one holding this program (build/emily_embed ->
 * models/...). */
static char *default_model(void) {
    const char *env = getenv("EMILY_MINILM_DIR");
    if (env && *env) return strdup(env);
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return strdup(MODEL_SUBDIR);
    exe[n] = '\0';
    for (int k = 0; k < 2; k++) { /* strip the program's name, then its folder */
        char *slash = strrchr(exe, '/');
        if (!slash) return strdup(MODEL_SUBDIR);
        *slash = '\0';
    }
    size_t len = strlen(exe) + sizeof MODEL_SUBDIR + 1;
    char *p = malloc(len);
    if (p) snprintf(p, len, "%s/%s", exe, MODEL_SUBDIR);
    return p;
}

static double clock_s(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

static void progress(void *ctx, int done, int total, int seq) {
    const args *a = ctx;
    if (a->show_batches)
        fprintf(stderr, "emily_embed:   %d/%d sentences (batch padded to %d tokens)\n", done, total, seq);
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The median of n values (sorts them). */
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void print_results(const args *a, const bert_tokenizer *tok, int hidden, const float *emb, const int *counts) {
    for (int i = 0; i < a->n; i++) {
        /* the first 60 bytes or so, not cutting a UTF-8 character */
        size_t len = strlen(a->texts[i]), shown = len;
        if (len > 60)
            for (shown = 60; shown > 0 && ((unsigned char)a->texts[i][shown] & 0xC0) == 0x80;) shown--;
        printf("[%d] %d tokens, \"%.*s%s\"\n    [", i, counts[i], (int)shown, a->texts[i], shown < len ? "..." : "");
        for (int j = 0; j < a->values && j < hidden; j++) printf(j ? ", %.6f" : "%.6f", emb[(size_t)i * hidden + j]);
        printf(a->values < hidden ? ", ...] (%d values)\n" : "] (%d values)\n", hidden);
        if (a->ids) {
            int32_t *ids;
            int n;
            if (tokenizer_encode(tok, a->texts[i], strlen(a->texts[i]), a->max_length, &ids, &n) == EMILY_OK) {
                printf("    ids:");
                for (int j = 0; j < n; j++) printf(" %d", (int)ids[j]);
                printf("\n");
                free(ids);
            }
        }
    }
    if (a->n > 1) printf("cosine similarity:\n");
    for (int i = 0; i < a->n; i++) {
        for (int j = i + 1; j < a->n; j++) {
            double dot = 0, ni = 0, nj = 0;
            for (int k = 0; k < hidden; k++) {
                double x = emb[(size_t)i * hidden + k], y = emb[(size_t)j * hidden + k];
                dot += x * y, ni += x * x, nj += y * y;
            }
            printf("  [%d] [%d] %.4f\n", i, j, ni > 0 && nj > 0 ? dot / sqrt(ni * nj) : 0.0);
        }
    }
}

/* The embeddings as raw f32 (the host is little-endian: x86-64, arm64). */
static emily_status write_floats(const char *path, const float *v, size_t n) {
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(v, sizeof *v, n, f) == n;
    if (f && fclose(f) != 0) ok = false;
    return ok ? EMILY_OK : emily_error(EMILY_ERR_ARGUMENT, "cannot write %s: %s", path, strerror(errno));
}

static int run(args *a) {
    emily_device device;
    if (emily_device_parse(a->device, &device)) {
        fprintf(stderr, "emily_embed: --device %s: %s\n", a->device, emily_last_error());
        return 2;
    }
    char *dflt = a->model ? NULL : default_model();
    const char *dir = a->model ? a->model : dflt;
    char config[PATH_MAX];
    snprintf(config, sizeof config, "%s/config.json", dir ? dir : "");
    if (!dir || access(config, R_OK) != 0) {
        fprintf(stderr,
                "emily_embed: no model at %s (no config.json there).\n"
                "  scripts/setup installs all-MiniLM-L6-v2 into " MODEL_SUBDIR ";\n"
                "  or pass --model DIR, or set EMILY_MINILM_DIR, to a folder with config.json,\n"
                "  model.safetensors and tokenizer.json (or vocab.txt).\n",
                dir ? dir : "(unknown)");
        free(dflt);
        return 1;
    }
    double t0 = now_s();
    bert_tokenizer *tok = NULL;
    bert_model *m = NULL;
    emily_status s = tokenizer_load(dir, &tok);
    if (!s) s = bert_load(dir, device, &m);
    if (!s) s = emily_synchronize(device);
    if (!s && !a->quiet)
        fprintf(stderr, "emily_embed: %s loaded on %s in %.0f ms (%d layers, hidden %d, %d heads)\n", dir, a->device,
                1e3 * (now_s() - t0), m->cfg.layers, m->cfg.hidden, m->cfg.heads);
    float *emb = NULL;
    int *counts = NULL;
    /* per run: wall time, and the process's CPU time (all threads) */
    double *times = calloc(2 * (size_t)a->runs, sizeof *times), *cpu = times + a->runs;
    if (!s) {
        emb = malloc((size_t)a->n * (size_t)m->cfg.hidden * sizeof *emb);
        counts = malloc((size_t)a->n * sizeof *counts);
        if (!emb || !counts || !times) s = emily_error(EMILY_ERR_MEMORY, "emily_embed: out of memory");
    }
    int batch_tokens = a->batch_tokens >= 0 ? a->batch_tokens : device.type == EMILY_DEVICE_CPU ? 512 : 0;
    embed_options opt = {a->max_length, a->batch_size, batch_tokens, progress, a};
    /* with --runs N > 1: a warm-up (r = -1), then N timed runs */
    for (int r = a->runs > 1 ? -1 : 0; r < a->runs && !s; r++) {
        embed_stats st;
        a->show_batches = r == (a->runs > 1 ? -1 : 0) && !a->quiet;
        double cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        s = embed_texts(tok, m, a->n, (const char *const *)a->texts, &opt, emb, counts, &st);
        if (r >= 0) {
            times[r] = st.tokenize_s + st.model_s;
            cpu[r] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
        }
        if (!s && a->show_batches)
            fprintf(stderr,
                    "emily_embed: %d sentences, %lld tokens (%lld positions with padding): tokenized in %.1f ms, "
                    "embedded in %.1f ms (%d batches)\n",
                    a->n, st.tokens, st.padded, 1e3 * st.tokenize_s, 1e3 * st.model_s, st.batches);
    }
    if (!s && a->runs > 1) { /* asked for, so printed even with --quiet */
        double best = times[0];
        for (int r = 1; r < a->runs; r++) best = times[r] < best ? times[r] : best;
        fprintf(stderr,
                "emily_embed: %d runs: median %.1f ms, best %.1f ms, median CPU time %.1f ms "
                "(tokenizing and embedding %d sentences)\n",
                a->runs, 1e3 * median(times, a->runs), 1e3 * best, 1e3 * median(cpu, a->runs), a->n);
    }
    if (!s && a->out) s = write_floats(a->out, emb, (size_t)a->n * (size_t)m->cfg.hidden);
    if (!s) print_results(a, tok, m->cfg.hidden, emb, counts);
    else fprintf(stderr, "emily_embed: %s: %s\n", emily_status_name(s), emily_last_error());
    free(times);
    free(emb);
    free(counts);
    bert_free(m);
    tokenizer_free(tok);
    free(dflt);
    return s ? 1 : 0;
}

int main(int argc, char **argv) {
    args a = {.device = "cpu", .max_length = 256, .batch_size = 32, .batch_tokens = -1, .runs = 1, .values = 6};
    char **owned = NULL;
    int nowned = 0, rc = parse_args(argc, argv, &a);
    if (!rc && a.file && !read_lines(&a, a.file, &owned, &nowned)) rc = 1;
    if (!rc && a.n == 0) {
        usage(stderr);
        rc = 2;
    }
    if (!rc) rc = run(&a);
    for (int i = 0; i < nowned; i++) free(owned[i]);
    free(owned);
    free(a.texts);
    return rc;
}
